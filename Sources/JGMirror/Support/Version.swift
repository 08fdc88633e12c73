/// The version reports and the User-Agent carry.
public enum JGMirrorVersion {
    public static let string = "1.0.0"
}
