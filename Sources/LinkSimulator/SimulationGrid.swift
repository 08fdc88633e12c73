import Foundation

/// Every combination of the links, files and connection counts issue 12 asks about,
/// simulated under every policy, and the tables `bench/RESULTS.md` shows of them.
public struct SimulationGrid: Sendable {
    /// Round-trip times, seconds.
    public var roundTrips: [Double] = [0.0001, 0.01, 0.05, 0.2]
    /// Per-connection caps, bytes per second.
    public var rates: [Double] = [1e6, 10e6, 100e6]
    /// File sizes.
    public var sizes: [Int64] = [1 << 20, 48 << 20, 1 << 30, 4 << 30]
    /// Connection counts.
    public var connectionCounts: [Int] = [1, 4, 8, 16]
    /// The hasher's speed (SHA-256 with the CPU's SHA instructions, as measured by
    /// `jgmirror verify` in RESULTS.md: 1 GiB in 0.77 s).
    public var hashBytesPerSecond: Double = 1.4e9

    public init() {}

    /// One cell of the grid.
    public struct Cell: Sendable {
        public var scenario: LinkScenario
        /// Each policy, the other connections opening after the first head.
        public var results: [SchedulingPolicy: SimulationResult]
        /// The chosen policy under each way of opening the connections.
        public var openings: [Opening: SimulationResult]
    }

    /// The scenario of one cell: with `slow`, the second connection (the only one when
    /// there is one) runs at a tenth of the rate; its region follows the first, so the
    /// prefix the hasher needs waits on it.
    public func scenario(size: Int64, connections: Int, rate: Double, roundTrip: Double, slow: Bool) -> LinkScenario {
        LinkScenario(
            size: size, connections: connections, bytesPerSecond: rate, roundTrip: roundTrip,
            hashBytesPerSecond: hashBytesPerSecond, slowConnection: slow ? min(1, connections - 1) : nil)
    }

    /// Simulates every cell under every policy, and `chosen` under every opening.
    public func run(chosen: SchedulingPolicy) -> [Cell] {
        var cells: [Cell] = []
        for size in sizes {
            for roundTrip in roundTrips {
                for rate in rates {
                    for connections in connectionCounts {
                        for slow in [false, true] {
                            let scenario = scenario(
                                size: size, connections: connections, rate: rate,
                                roundTrip: roundTrip, slow: slow)
                            var results: [SchedulingPolicy: SimulationResult] = [:]
                            for policy in SchedulingPolicy.allCases {
                                results[policy] = LinkSimulation.run(scenario, policy: policy)
                            }
                            var openings: [Opening: SimulationResult] = [:]
                            for opening in Opening.allCases {
                                openings[opening] = LinkSimulation.run(scenario, policy: chosen, opening: opening)
                            }
                            cells.append(Cell(scenario: scenario, results: results, openings: openings))
                        }
                    }
                }
            }
        }
        return cells
    }

    /// The tables: each policy summed up over the grid, the bench's links, then time
    /// over the physical limit of `chosen` for every cell, one table per file size.
    public func markdown(_ cells: [Cell], chosen: SchedulingPolicy) -> String {
        var lines = summary(cells, chosen: chosen)
        lines.append("")
        lines += benchLinks(chosen: chosen)
        lines.append("")
        for size in sizes { lines += table(of: size, cells, chosen: chosen) + [""] }
        return lines.joined(separator: "\n")
    }

    /// Each policy, and `chosen` under each way of opening, summed up over the grid.
    private func summary(_ cells: [Cell], chosen: SchedulingPolicy) -> [String] {
        var lines: [String] = []
        lines.append(
            "Simulated completion time over the physical limit (`max(size / Σ rates, size / hash rate) + 2 RTT`), "
                + "\(cells.count) scenarios, hashing at \(LinkScenario.rate(hashBytesPerSecond)).")
        lines.append("")
        lines.append("| policy | geometric mean | worst | scenarios ≤ 1.05 × | mean, one connection slow | worst, one slow |")
        lines.append("|---|---:|---:|---:|---:|---:|")
        func summary(_ label: String, _ result: (Cell) -> SimulationResult) {
            let ratios = cells.map { result($0).ratio }
            let slow = cells.filter { $0.scenario.slowConnection != nil && $0.scenario.connections > 1 }
                .map { result($0).ratio }
            let worst = cells.max { result($0).ratio < result($1).ratio }!
            let within = ratios.filter { $0 <= 1.05 }.count
            lines.append(
                "| \(label) | \(Self.format(Self.geometricMean(ratios))) | \(Self.format(result(worst).ratio)) "
                    + "(\(worst.scenario)) | \(within) of \(ratios.count) | \(Self.format(Self.geometricMean(slow))) "
                    + "| \(Self.format(slow.max() ?? 0)) |")
        }
        for policy in SchedulingPolicy.allCases { summary("\(policy)", { $0.results[policy]! }) }
        for opening in Opening.allCases where opening != .afterFirstHead {
            summary("\(chosen), \(opening)", { $0.openings[opening]! })
        }
        return lines
    }

    /// The bench's WAN links (48 MiB, 8 connections of 4 MB/s) under every policy.
    private func benchLinks(chosen: SchedulingPolicy) -> [String] {
        var lines = ["The bench's links (48 MiB, 8 connections of 4 MB/s), simulated seconds:", ""]
        var header = "| link | physical limit |"
        var rule = "|---|---:|"
        for policy in SchedulingPolicy.allCases {
            header += " \(policy) |"
            rule += "---:|"
        }
        lines += [header + " \(chosen), preconnected |", rule + "---:|"]
        for (roundTrip, slow) in [(0.05, false), (0.2, false), (0.1, true)] {
            var scenario = LinkScenario(
                size: 48 << 20, connections: 8, bytesPerSecond: 4e6, roundTrip: roundTrip,
                hashBytesPerSecond: hashBytesPerSecond)
            // The proxy slows every fifth connection it accepts: the fifth of eight.
            if slow { scenario.slowConnection = 4 }
            var row =
                "| RTT \(LinkScenario.seconds(roundTrip))\(slow ? ", connection 5 at 1/10" : "") | "
                + "\(Self.seconds(scenario.physicalLimit)) |"
            for policy in SchedulingPolicy.allCases {
                let result = LinkSimulation.run(scenario, policy: policy)
                row += " \(Self.seconds(result.seconds)) (\(result.requests) req.) |"
            }
            row += " \(Self.seconds(LinkSimulation.run(scenario, policy: chosen, opening: .preconnected).seconds)) |"
            lines.append(row)
        }
        return lines
    }

    /// `chosen`'s time over the physical limit for every cell of one file size, with
    /// every connection at the rate and with one at a tenth of it.
    private func table(of size: Int64, _ cells: [Cell], chosen: SchedulingPolicy) -> [String] {
        var lines = [
            "**\(LinkScenario.bytes(size)), \(chosen)** — each cell: all connections at the rate / one at a tenth of it", "",
        ]
        var header = "| RTT | rate per connection |"
        var rule = "|---:|---:|"
        for connections in connectionCounts {
            header += " \(connections) connection\(connections == 1 ? "" : "s") |"
            rule += "---:|"
        }
        lines += [header, rule]
        for roundTrip in roundTrips {
            for rate in rates {
                var row = "| \(LinkScenario.seconds(roundTrip)) | \(LinkScenario.rate(rate)) |"
                for connections in connectionCounts {
                    let pair = cells.filter {
                        $0.scenario.size == size && $0.scenario.roundTrip == roundTrip
                            && $0.scenario.bytesPerSecond == rate && $0.scenario.connections == connections
                    }
                    let fast = pair.first { $0.scenario.slowConnection == nil }!.results[chosen]!.ratio
                    let slow = pair.first { $0.scenario.slowConnection != nil }!.results[chosen]!.ratio
                    row += " \(Self.format(fast)) / \(Self.format(slow)) |"
                }
                lines.append(row)
            }
        }
        return lines
    }

    static func geometricMean(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        return exp(values.reduce(0) { $0 + log($1) } / Double(values.count))
    }

    static func seconds(_ value: Double) -> String { "\(format(value)) s" }

    static func format(_ ratio: Double) -> String {
        let hundredths = Int((ratio * 100).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
    }
}
