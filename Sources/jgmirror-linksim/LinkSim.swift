import ArgumentParser
import Foundation
import LinkSimulator

/// Runs the link simulator (see `LinkSimulation`): `grid` prints the tables of
/// bench/RESULTS.md, `run` one scenario under every policy.
@main
struct LinkSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jgmirror-linksim",
        abstract: "The engine's scheduling policy on simulated links, in virtual time.",
        subcommands: [Grid.self, Run.self])
}

extension SchedulingPolicy: ExpressibleByArgument {}

/// Every scenario of the grid under every policy.
struct Grid: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Every scenario of the grid under every policy, as bench/RESULTS.md's markdown tables.")

    @Option(help: "The policy whose ratios each cell shows.")
    var policy: SchedulingPolicy = .finishTogether

    func run() {
        let grid = SimulationGrid()
        print(grid.markdown(grid.run(chosen: policy), chosen: policy))
    }
}

/// One scenario under every policy.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One scenario under every policy.")

    @Argument(help: ArgumentHelp("The file's size in MiB.", valueName: "size-mib")) var sizeMiB: Int64
    @Argument(help: "Connections.") var connections: Int
    @Argument(help: "Each connection's cap in bytes per second.") var rateBytesPerS: Double
    @Argument(help: "The round trip in seconds.") var rttS: Double
    @Option(help: "This connection runs at a tenth of the rate.") var slow: Int?
    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp("Connection N stops AT seconds in, for TIMEOUT seconds.", valueName: "N AT TIMEOUT"))
    var stall: [Double] = []

    func validate() throws {
        guard sizeMiB > 0, connections > 0, rateBytesPerS > 0, rttS >= 0 else {
            throw ValidationError("size, connections and rate must be positive, the round trip not negative")
        }
        if let slow, !(0..<connections).contains(slow) { throw ValidationError("--slow must name a connection") }
        if !stall.isEmpty {
            guard stall.count == 3, let index = Int(exactly: stall[0]), (0..<connections).contains(index) else {
                throw ValidationError("--stall takes a connection, a time and a timeout: --stall N AT TIMEOUT")
            }
        }
    }

    func run() {
        var scenario = LinkScenario(
            size: sizeMiB << 20, connections: connections, bytesPerSecond: rateBytesPerS, roundTrip: rttS)
        scenario.slowConnection = slow
        if stall.count == 3 {
            scenario.stall = LinkScenario.Stall(connection: Int(stall[0]), at: stall[1], timeout: stall[2])
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
    }
}
