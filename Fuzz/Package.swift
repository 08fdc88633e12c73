// swift-tools-version:6.0
// libFuzzer target for the manifest parser. Built with -sanitize=fuzzer, which
// supplies main(), so it lives outside the main package: see Fuzz/run.sh.
import PackageDescription

let package = Package(
    name: "jgmirror-fuzz",
    dependencies: [.package(name: "jgmirror", path: "..")],
    targets: [
        .executableTarget(
            name: "ManifestFuzzer",
            dependencies: [.product(name: "JGMirror", package: "jgmirror")]
        )
    ]
)
