package cli

// SetReembedBatch sets the reembed batch size for a test and returns the
// function that restores it.
func SetReembedBatch(n int) func() {
	old := reembedBatch
	reembedBatch = n
	return func() { reembedBatch = old }
}
