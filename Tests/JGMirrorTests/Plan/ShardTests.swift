import Foundation
import Testing

@testable import JGMirror

/// `--shard auto` and `--shard-count` against the variables of Slurm and Kubernetes
/// (docs/scale-out.md), with the environment given as a dictionary.
@Suite struct ShardTests {
    /// What Slurm exports for `--array=first-last:step` to the task `task`.
    func slurm(task: Int, first: Int, last: Int, step: Int = 1) -> [String: String] {
        [
            "SLURM_ARRAY_TASK_ID": "\(task)", "SLURM_ARRAY_TASK_MIN": "\(first)", "SLURM_ARRAY_TASK_MAX": "\(last)",
            "SLURM_ARRAY_TASK_COUNT": "\((last - first) / step + 1)", "SLURM_ARRAY_TASK_STEP": "\(step)",
        ]
    }

    /// The usage error `body` throws, as the person at the terminal reads it.
    func message(_ body: () throws -> Shard?) -> String? {
        do {
            _ = try body()
            return nil
        } catch { return (error as? UsageError)?.message ?? "not a usage error: \(error)" }
    }

    @Test func slurmArrayFromZeroNeedsNoCount() throws {
        for task in 0...3 {
            #expect(
                try Shard.automatic(count: nil, environment: slurm(task: task, first: 0, last: 3)) == Shard(index: task, count: 4)
            )
        }
    }

    @Test func slurmArrayFromOneMapsOntoEveryShard() throws {
        let shards = try (1...4).map { try Shard.automatic(count: 4, environment: slurm(task: $0, first: 1, last: 4)) }
        #expect(shards.map(\.description) == ["0/4", "1/4", "2/4", "3/4"])
    }

    @Test func slurmArrayWithAStep() throws {
        let shards = try [0, 2, 4, 6].map {
            try Shard.automatic(count: nil, environment: slurm(task: $0, first: 0, last: 6, step: 2))
        }
        #expect(shards.map(\.description) == ["0/4", "1/4", "2/4", "3/4"])
        #expect(
            message { try Shard.automatic(count: nil, environment: slurm(task: 3, first: 0, last: 6, step: 2)) }?.contains(
                "not one of the array's tasks") == true)
    }

    @Test func aCountThatDisagreesWithTheArrayIsAUsageError() {
        let text = message { try Shard.automatic(count: 3, environment: slurm(task: 1, first: 1, last: 4)) }
        #expect(text == "--shard-count 3 disagrees with the Slurm array, which has 4 tasks (SLURM_ARRAY_TASK_COUNT)")
    }

    @Test func anArrayThatIsNotEvenlySpacedIsRefused() {
        // --array=0,2,7: Slurm reports min 0, max 7, count 3.
        var environment = slurm(task: 2, first: 0, last: 7)
        environment["SLURM_ARRAY_TASK_COUNT"] = "3"
        #expect(message { try Shard.automatic(count: nil, environment: environment) }?.contains("evenly spaced") == true)
    }

    @Test func slurmWithoutTheArrayBoundsNeedsACount() throws {
        #expect(try Shard.automatic(count: 4, environment: ["SLURM_ARRAY_TASK_ID": "2"]) == Shard(index: 2, count: 4))
        #expect(
            message { try Shard.automatic(count: nil, environment: ["SLURM_ARRAY_TASK_ID": "2"]) }?.contains("--shard-count")
                == true)
    }

    @Test func kubernetesNeedsTheCount() throws {
        #expect(try Shard.automatic(count: 4, environment: ["JOB_COMPLETION_INDEX": "3"]) == Shard(index: 3, count: 4))
        #expect(
            message { try Shard.automatic(count: nil, environment: ["JOB_COMPLETION_INDEX": "3"]) }?.contains("--shard-count")
                == true)
        #expect(
            message { try Shard.automatic(count: 2, environment: ["JOB_COMPLETION_INDEX": "3"]) }?.contains("out of range")
                == true)
    }

    @Test func bothEnginesAtOnceIsAUsageError() {
        var environment = slurm(task: 0, first: 0, last: 3)
        environment["JOB_COMPLETION_INDEX"] = "0"
        #expect(
            message { try Shard.automatic(count: 4, environment: environment) }?.contains("both JOB_COMPLETION_INDEX") == true)
    }

    @Test func neitherEngineIsAUsageError() {
        #expect(message { try Shard.automatic(count: 4, environment: [:]) }?.contains("neither") == true)
    }

    @Test func aCountBesideAnExplicitShardIsAUsageError() throws {
        #expect(
            message { try Shard.resolve(option: "1/4", count: 4, environment: [:]) }?.contains(
                "--shard-count goes only with --shard auto") == true)
        #expect(message { try Shard.resolve(option: nil, count: 4, environment: [:]) }?.contains("needs --shard auto") == true)
        #expect(try Shard.resolve(option: "1/4", count: nil, environment: [:]) == Shard(index: 1, count: 4))
        #expect(try Shard.resolve(option: nil, count: nil, environment: [:]) == nil)
        #expect(
            try Shard.resolve(option: "auto", count: nil, environment: slurm(task: 4, first: 1, last: 4))
                == Shard(index: 3, count: 4))
    }
}
