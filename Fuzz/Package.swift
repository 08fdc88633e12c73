// swift-tools-version:6.0
// libFuzzer targets for the manifest parser and for the walk below the mirror root.
// Built with -sanitize=fuzzer, which supplies main(), so they live outside the main
// package: see Fuzz/run.sh.
import PackageDescription

let package = Package(
    name: "jgmirror-fuzz",
    dependencies: [.package(name: "jgmirror", path: "..")],
    targets: [
        .executableTarget(
            name: "ManifestFuzzer",
            dependencies: [.product(name: "JGMirror", package: "jgmirror")]
        ),
        .executableTarget(
            name: "PathFuzzer",
            dependencies: [.product(name: "JGMirror", package: "jgmirror")]
        ),
    ]
)
