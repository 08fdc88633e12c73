// swift-tools-version:6.2
import PackageDescription

// Linux only: the engine uses Linux system calls (openat2, fdatasync, sync_file_range,
// statfs) and the Debian packages below. SwiftPM has no platform entry for Linux, so
// none is declared.
//
// Our own targets fail to build on any warning, in every build (tests, release, the
// man-page plugin's), so they all share one set of flags. SwiftPM ignores this for a
// package that depends on this one.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "jgmirror",
    products: [
        .executable(name: "jgmirror", targets: ["jgmirror"]),
        .library(name: "JGMirror", targets: ["JGMirror"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The compressed forms of apt's indexes (Packages.xz, Packages.gz).
        .systemLibrary(
            name: "CLZMA",
            pkgConfig: "liblzma",
            providers: [.apt(["liblzma-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // The Linux calls Glibc's module hides (`syncfs`, `openat2`, `O_TMPFILE`); not
        // `CSystem`, which swift-system's own module is called.
        .target(name: "CLinux"),
        .target(
            name: "JGMirror",
            dependencies: [
                "CCurl", "CYAML", "CCrypto", "CLinux", "CLZMA", "CZlib",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "jgmirror",
            dependencies: [
                "JGMirror", "CLinux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // An HTTP/1.1 origin with Range, ETag and switchable faults; the tests run it
        // in-process and the demo and benchmarks run it as `jgmirror-origin`.
        .target(
            name: "TestServer",
            path: "Tests/TestServer",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "jgmirror-origin",
            dependencies: ["TestServer", "JGMirror", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        // Drives the engine's range scheduler with simulated connections in virtual
        // time (bench/RESULTS.md's grid: `jgmirror-linksim grid`).
        .target(
            name: "LinkSimulator",
            dependencies: ["JGMirror"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "jgmirror-linksim",
            dependencies: ["LinkSimulator", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "MirrorTwoFiles",
            dependencies: ["JGMirror"],
            path: "Examples/MirrorTwoFiles",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "SyncWithSets",
            dependencies: ["JGMirror"],
            path: "Examples/SyncWithSets",
            swiftSettings: strict
        ),
        .testTarget(
            name: "JGMirrorTests",
            dependencies: [
                "JGMirror", "TestServer", "jgmirror", "LinkSimulator", "SyncWithSets",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
    ]
)
