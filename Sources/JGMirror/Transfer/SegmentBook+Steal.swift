extension SegmentBook {
    /// The arithmetic of one steal (`stealFinishingTogether`): the rates and waits it
    /// weighs, the moment `together` when every connection could finish, and from
    /// them the victim and the cut.
    struct StealPlan {
        let thief: Owner
        let rates: [Owner: Double]
        let startsIn: [Owner: Double]
        let latency: Double
        /// The mean of the known rates, for a connection that has shown none.
        let mean: Double
        /// When every missing byte can have arrived, seconds from now.
        let together: Double

        /// A region that could give work, and when it finishes alone.
        struct Victim {
            let owner: Owner
            let region: Region
            /// Seconds until its owner finishes it alone; infinite when stalled.
            let seconds: Double

            var stalled: Bool { seconds.isInfinite }
        }

        init(book: SegmentBook, thief: Owner, rates: [Owner: Double], startsIn: [Owner: Double], latency: Double) {
            self.thief = thief
            self.rates = rates
            self.startsIn = startsIn
            self.latency = latency
            let known = rates.values.filter { $0 > 0 }
            mean = known.isEmpty ? 1 : known.reduce(0, +) / Double(known.count)
            var total = 0.0
            var waited = 0.0
            for owner in Set(book.regions.keys).union([thief]) {
                total += max(0, rates[owner] ?? mean)
                waited += max(0, rates[owner] ?? mean) * Self.wait(owner, thief: thief, book: book, startsIn, latency)
            }
            together = total > 0 ? (Double(book.remaining) + waited) / total : 0
        }

        func rate(_ owner: Owner) -> Double { max(0, rates[owner] ?? mean) }

        var thiefRate: Double { rate(thief) > 0 ? rate(thief) : mean }

        /// How long `owner` waits for its next byte: a connection done with its region
        /// waits like the thief for its next one.
        private static func wait(
            _ owner: Owner, thief: Owner, book: SegmentBook, _ startsIn: [Owner: Double], _ latency: Double
        ) -> Double {
            owner == thief || book.regions[owner]?.remaining == 0 ? latency : max(0, startsIn[owner] ?? 0)
        }

        private func wait(_ owner: Owner, in book: SegmentBook) -> Double {
            Self.wait(owner, thief: thief, book: book, startsIn, latency)
        }

        /// The region that would end last, of those not `excluded`: a stalled one
        /// whatever its size, a moving one only with more than `minSegment` left. Ties
        /// go to the lowest offset, so the outcome does not depend on dictionary order.
        func lastToFinish(in book: SegmentBook, excluding excluded: Set<Owner>) -> Victim? {
            var victim: Victim?
            for (owner, region) in book.regions where owner != thief && region.remaining > 0 {
                guard !excluded.contains(owner), rate(owner) == 0 || region.remaining > book.minSegment else { continue }
                let seconds =
                    rate(owner) > 0 ? wait(owner, in: book) + Double(region.remaining) / rate(owner) : .infinity
                if let best = victim,
                    seconds < best.seconds || (seconds == best.seconds && region.next > best.region.next)
                {
                    continue
                }
                victim = Victim(owner: owner, region: region, seconds: seconds)
            }
            return victim
        }

        /// What the thief takes of `victim`'s region: from where the victim, at its
        /// rate, reaches `together` (at least `minSegment` before its end, 64 KiB
        /// aligned), one of the equal pieces the rest splits into, each about what the
        /// thief fetches by then and at least `minSegment`. Nil when the two would not
        /// both finish sooner than the victim alone.
        func cut(_ victim: Victim, in book: SegmentBook) -> ByteRange? {
            let region = victim.region
            let victimWait = wait(victim.owner, in: book)
            let kept = min(Double(region.remaining), rate(victim.owner) * max(0, together - victimWait))
            var cut = region.next + Int64(kept)
            if !victim.stalled, region.end - cut < book.minSegment { cut = region.end - book.minSegment }
            cut = max(region.next, cut - cut % (64 * 1024))
            guard cut < region.end else { return nil }
            let victimDone = victim.stalled ? 0 : victimWait + Double(cut - region.next) / rate(victim.owner)
            // The rest in as many equal pieces as the thief's part fits, none under `minSegment`.
            let rest = region.end - cut
            let part = max(book.minSegment, Int64(thiefRate * max(0, together - latency)))
            let pieces = max(1, rest / part)
            var share = rest / pieces + (rest % pieces == 0 ? 0 : 1)
            share = min(rest, share + (64 * 1024 - share % (64 * 1024)) % (64 * 1024))
            let thiefDone = latency + Double(share) / thiefRate
            guard max(victimDone, thiefDone) < victim.seconds else { return nil }
            return ByteRange(lower: cut, upper: cut + share)
        }
    }
}
