import Testing

@testable import JGMirror

/// One origin per `scheme://host:port`, whoever asks: the redirect rules, the cap on
/// connections per host and the host table.
@Suite struct OriginTests {
    @Test(arguments: [
        ("http://User:pw@Example.COM:8080/a?b", "http://example.com:8080"),
        ("https://h/x#y", "https://h:443"),
        ("https://h?q=1", "https://h:443"),
        ("https://a@b@h/x", "https://h:443"),
        ("HTTP://H", "http://h:80"),
        ("http://h:/x", "http://h:80"),
        ("http://[::1]/", "http://[::1]:80"),
        ("http://[::1]:81/", "http://[::1]:81"),
        ("file:///srv/a", "file://"),
        ("https://Bücher.Example/x", "https://bücher.example:443"),
        ("https://ÜSER@Host/x", "https://host:443"),
    ])
    func originIsSchemeHostAndPortWithoutCredentials(url: String, origin: String) {
        #expect(Origin.of(url) == origin)
        #expect(Origin.key(url) == origin)
    }

    /// The engine's cap on connections per host and the redirect rules once parsed
    /// the same URL two ways: `https://h` and `https://h:443` were two hosts to one.
    @Test func theDefaultPortWrittenOrNotIsOneOrigin() {
        #expect(Origin.key("https://h/a") == Origin.key("https://H:443/b"))
        #expect(Origin.key("http://h/a") != Origin.key("http://h:8080/a"))
        #expect(Origin.key("http://h/a") != Origin.key("https://h/a"))
    }

    @Test func textWithoutASchemeIsItsOwnKey() {
        #expect(Origin.of("not a url") == nil)
        #expect(Origin.key("not a url") == "not a url")
    }
}
