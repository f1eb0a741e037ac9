// Package sdk is the Go client for memgate, the memory server for AI
// agents. It is memgate's only public package and depends on the standard
// library alone.
//
// It has three parts:
//
//   - Client speaks REST v1 as an agent or an operator, with a bearer
//     token: Write, Get, Patch, Forget, History, List (and Records, which
//     walks every page), Search and WhoAmI. A non-2xx answer is an *Error
//     carrying the HTTP status, the error code, message and details, and
//     Retry-After.
//
//   - GatewayClient speaks the Memory Gateway contract (SPEC §6) that chat
//     runtimes use: POST /memories/search, /memories/add, /memories/flush,
//     /memories/jobs/get, and POST /users for operators. The end user's
//     credentials (user_id, user_key) travel in each request body.
//
//   - Hybrid is the helper a chat runtime wraps around each model run:
//     RecallBeforeRun returns memories to show the model as untrusted
//     reference material, PersistAfterRun stores the completed turn (one
//     add, then a flush only if the add succeeded, no automatic retry).
//     Neither ever fails the user's turn; every outcome is an Event with
//     sanitized metadata, sent to a sink the runtime provides. LoadHybrid
//     builds it from the runtime's configuration and degrades to
//     curated-only memory, with one warning, when no credentials are set.
//
// No error, warning, event or printed request value holds a token or a
// user key. Requests are never retried by this package, and the default
// HTTP client does not follow redirects.
//
// A chat runtime's loop looks like this:
//
//	h, warnings, err := sdk.LoadHybrid(cfg.Memory, sdk.SlogSink(logger))
//	if err != nil {
//		return err // an explicit, invalid configuration
//	}
//	for _, w := range warnings {
//		logger.Warn(w)
//	}
//	...
//	refs := h.RecallBeforeRun(ctx, sdk.RecallInput{ConversationID: conv, Query: prompt})
//	answer := runModel(ctx, prompt, refs) // show refs as quoted data, not instructions
//	h.PersistAfterRun(ctx, sdk.PersistInput{ConversationID: conv, UserPrompt: prompt, FinalAnswer: answer})
package sdk
