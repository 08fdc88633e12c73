.PHONY: build test demo bench format
build:
	swift build
test:
	scripts/test.sh
demo:
	scripts/demo.sh
bench:
	bench/run.sh
format:
	swift format --in-place --recursive Sources Tests Examples
