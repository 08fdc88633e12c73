import JGMirror

/// libFuzzer entry point: any bytes must parse into a manifest or give a
/// `ManifestError` that has a line and column; never a crash or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManifest(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    var options = ManifestOptions()
    options.environment = ["HOST": "http://h"]
    do {
        let manifest = try Manifest.parse(text, name: "fuzz.yaml", options: options)
        _ = Plan(manifest: manifest)
    } catch {
        precondition(error.location != nil, "error without a position: \(error.message)")
    }
    return 0
}

/// libFuzzer's documented way in for a program that has its own `main`: SwiftPM
/// links an executable target's entry point under this name.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt

@_cdecl("ManifestFuzzer_main")
public func fuzzerMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { fuzzManifest($0, $1) }
}
