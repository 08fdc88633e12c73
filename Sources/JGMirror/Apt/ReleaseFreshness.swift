/// Whether a newly fetched Release may replace the one a mirror holds: a pure
/// function of the two and the time, so the rule is tested without a clock.
///
/// A signature proves who made a Release, not when: an attacker (or a stale mirror
/// upstream) can serve an old, validly signed Release whose indexes name packages
/// with known holes. apt refuses a Release past its `Valid-Until`, and a Release
/// older than the one it holds; a mirror must refuse them before its readers do,
/// or it would publish what every apt client then rejects.
enum ReleaseFreshness {
    /// nil when `new` may replace `held` (nil on a first sync) at `now`; otherwise why
    /// not. A Release dated exactly as the held one is the same release fetched again.
    static func problem(held: AptRelease?, new: AptRelease, now: Int64, file: String) -> AptError? {
        if let validUntil = new.validUntil, now > validUntil {
            return .expired(file: file, validUntil: validUntil, now: now)
        }
        guard let heldDate = held?.date else { return nil }
        guard let date = new.date else { return .undated(file: file) }
        if date < heldDate { return .replayed(file: file, date: date, held: heldDate) }
        return nil
    }
}
