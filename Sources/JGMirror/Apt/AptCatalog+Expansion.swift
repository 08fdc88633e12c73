/// An `apt:` set in a run (docs/apt.md): each suite read and verified on its own
/// (`AptSuiteReader`), then its pool files, indexes and Release files made items and
/// groups (`AptSetBuilder`). A suite that fails — a signature, a replayed or expired
/// Release, an index that differs from Release, one that cannot be fetched — is a
/// failed row of its own, and nothing of it changes; the other suites go on.
extension AptCatalog: ExpandingCatalog {
    func expand(_ set: ManifestSet, in context: CatalogContext, claims: inout SetExpansion) async throws(SyncError)
        -> CatalogExpansion
    {
        let reader = AptSuiteReader(catalog: self, set: set, context: context)
        var builder = AptSetBuilder(catalog: self, set: set)
        var failures: [ListFailure] = []
        // Every suite read at once (each waits on round trips), then added in order.
        let reads = await concurrentMap(suites) { suite async -> Result<AptSuiteReader.Suite, AptSuiteReader.Failure> in
            do throws(AptSuiteReader.Failure) { return .success(try await reader.read(suite)) } catch { return .failure(error) }
        }
        for (suite, read) in zip(suites, reads) {
            switch read {
            case .success(let read): builder.add(read, claims: &claims)
            case .failure(.run(let error)): throw error
            case .failure(.suite(let failure)):
                let folder = reader.folderURL(suite)
                failures.append(ListFailure(folder: set.dest + "dists/" + suite + "/", url: folder, error: failure))
            }
        }
        var expansion = builder.expansion
        expansion.failures += failures
        // A suite that failed names files its published indexes still promise.
        if !expansion.failures.isEmpty { expansion.distrusted = true }
        return expansion
    }
}
