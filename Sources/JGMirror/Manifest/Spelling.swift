import Foundation

/// "Did you mean …?" suggestions for mistyped keys.
enum Spelling {
    /// The candidate closest to `word` by edit distance, if it is close enough to be a typo.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let normalized = word.lowercased().replacingOccurrences(of: "-", with: "_")
        var best: (String, Int)?
        for candidate in candidates {
            if candidate == normalized || candidate.replacingOccurrences(of: "_", with: "") == normalized {
                return candidate
            }
            let distance = editDistance(Array(normalized), Array(candidate))
            if distance <= max(1, candidate.count / 3), distance < (best?.1 ?? Int.max) {
                best = (candidate, distance)
            }
        }
        return best?.0
    }

    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            previous = current
        }
        return previous[b.count]
    }
}
