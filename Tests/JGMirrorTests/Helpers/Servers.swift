import TestServer

/// A server that accepts every connection on `paths` and closes it without a word.
func silentServer(paths: [String]) throws -> TestServer {
    let server = try TestServer()
    for path in paths {
        var route = TestServer.Route(body: [1])
        route.fault = { _ in .raw([]) }
        server.set(path, route)
    }
    return server
}
