extension Worker {
    /// The worker's retry budget and source, as `RetryPolicy` weighs and updates them.
    var standing: RetryPolicy.Standing {
        get {
            RetryPolicy.Standing(
                source: self.sourceIndex, sourcesTried: self.sourcesTried, retriesLeft: self.retriesLeft,
                consecutiveFailures: self.consecutiveFailures)
        }
        set {
            self.sourceIndex = newValue.source
            self.sourcesTried = newValue.sourcesTried
            self.retriesLeft = newValue.retriesLeft
            self.consecutiveFailures = newValue.consecutiveFailures
        }
    }
}
