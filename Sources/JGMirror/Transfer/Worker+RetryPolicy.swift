extension Worker {
    /// The worker's retry budget and source, as `RetryPolicy` weighs and updates them.
    var standing: RetryPolicy.Standing {
        get {
            RetryPolicy.Standing(
                source: sourceIndex, sourcesTried: sourcesTried, retriesLeft: retriesLeft,
                consecutiveFailures: consecutiveFailures)
        }
        set {
            sourceIndex = newValue.source
            sourcesTried = newValue.sourcesTried
            retriesLeft = newValue.retriesLeft
            consecutiveFailures = newValue.consecutiveFailures
        }
    }
}
