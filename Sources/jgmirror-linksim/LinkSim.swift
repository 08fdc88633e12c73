import ArgumentParser
import Foundation
import LinkSimulator

/// Runs the link simulator (see `LinkSimulation`).
///
///     jgmirror-linksim grid [--policy NAME]
///         every scenario of issue 12's grid under every policy; prints the tables of
///         bench/RESULTS.md (markdown) with NAME's ratios per cell (finish-together)
///     jgmirror-linksim run SIZE_MIB CONNECTIONS RATE_BYTES_PER_S RTT_S [--slow N] [--stall N AT TIMEOUT]
///         one scenario under every policy
@main
struct LinkSim: ParsableCommand {
    /// Everything after the program name, read below as before.
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []

    func run() throws {
        var arguments = self.arguments
        guard let command = arguments.first else { throw Self.usage() }
        arguments.removeFirst()
        switch command {
        case "grid":
            var chosen = SchedulingPolicy.finishTogether
            if arguments.count == 2, arguments[0] == "--policy" {
                guard let policy = SchedulingPolicy(rawValue: arguments[1]) else { throw Self.usage() }
                chosen = policy
            } else if !arguments.isEmpty {
                throw Self.usage()
            }
            let grid = SimulationGrid()
            print(grid.markdown(grid.run(chosen: chosen), chosen: chosen))
        case "run":
            guard arguments.count >= 4, let mib = Int64(arguments[0]), let connections = Int(arguments[1]),
                let rate = Double(arguments[2]), let roundTrip = Double(arguments[3]), mib > 0, connections > 0,
                rate > 0, roundTrip >= 0
            else { throw Self.usage() }
            var scenario = LinkScenario(
                size: mib << 20, connections: connections, bytesPerSecond: rate,
                roundTrip: roundTrip)
            var rest = arguments.dropFirst(4)
            while let option = rest.popFirst() {
                switch option {
                case "--slow":
                    guard let index = rest.popFirst().flatMap(Int.init), index < connections else { throw Self.usage() }
                    scenario.slowConnection = index
                case "--stall":
                    guard let index = rest.popFirst().flatMap(Int.init), index < connections,
                        let at = rest.popFirst().flatMap(Double.init), let timeout = rest.popFirst().flatMap(Double.init)
                    else { throw Self.usage() }
                    scenario.stall = LinkScenario.Stall(connection: index, at: at, timeout: timeout)
                default: throw Self.usage()
                }
            }
            print("\(scenario): physical limit \(String(format: "%.3f", scenario.physicalLimit)) s")
            for policy in SchedulingPolicy.allCases {
                let result = LinkSimulation.run(scenario, policy: policy)
                print(
                    String(
                        format: "  %-22@ %8.3f s  %5.2f ×  last byte %8.3f s  hash tail %6.3f s  %5d requests  %3d connections",
                        policy.rawValue as NSString, result.seconds, result.ratio, result.lastByte, result.hashTail,
                        result.requests, result.connectionsOpened))
            }
        default: throw Self.usage()
        }
    }

    /// Says how to call the tool; thrown, it ends the process with status 2.
    static func usage() -> ExitCode {
        FileHandle.standardError.write(
            Data(
                """
                usage: jgmirror-linksim grid [--policy NAME]
                       jgmirror-linksim run SIZE_MIB CONNECTIONS RATE_BYTES_PER_S RTT_S [--slow N] [--stall N AT TIMEOUT]

                """.utf8))
        return ExitCode(2)
    }
}
