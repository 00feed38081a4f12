// Package scripted is a test double for [model.Model]: it plays recorded
// turns from a script instead of calling a real model, for tests, benchmarks
// and offline demos.
//
// A scripted model always says so. On its first Generate call each [Model]
// writes exactly one line to [Config.Notice] (standard error by default):
//
//	ratchet: scripted model "demo" (testdata/demo.yaml) is playing recorded turns; it is a test double, not a real model
//
// where the part in parentheses is the script's file, or "inline" for a
// script built in Go. [Config.Quiet] suppresses the line, for benchmarks.
//
// # Playing a script
//
// Call i of Generate plays turn i (calls are numbered from 1, as are turns),
// whatever the request says; the Model does not look at the conversation
// except to check expect (below) and to estimate usage. Past the last turn
// Generate returns an error wrapping [ErrExhausted]. A call whose context is
// already done when Generate is entered returns ctx.Err() and does not use up
// a turn; once a turn has been taken (even by a call that then fails, is
// cancelled during its delay, or does not meet its expectation) it is spent.
// A Model is safe for concurrent use: concurrent calls take turns in the
// order they take the Model's lock.
//
// A reply holds, in this order: the turn's thinking as one thinking block
// (model.Thinking, unsigned), the turn's text as one text block, one
// tool_use block per tool call, and a tool_use block named "finish" for the
// finish shorthand. Tool-use IDs are deterministic: call_<turn>_<index>, both
// 1-based, where index counts the turn's tool calls and then its finish, so a
// turn with two tools and a finish produces call_3_1, call_3_2 and call_3_3.
// StopReason is "tool_use" when the reply has a tool_use block, otherwise
// "end_turn", and "max_tokens" when its usage was capped (below);
// Response.Model is the script's name. An empty reply has an
// empty, non-nil Content. Replies are computed once per Script and shared by
// every Model playing it: treat Response.Content as read-only (appending to
// it, or to a block's Input, is safe).
//
// Usage is estimated unless the turn gives it: input tokens are ceil(n/4)
// where n is the byte length of the request's system prompt plus the Text and
// Input of every block of every message; output tokens are ceil(n/4) of the
// Text and Input of the reply's blocks. Cost is 0 and CostKnown is true: a
// scripted model is genuinely free. Output tokens, estimated or given, are
// capped at the request's MaxOutputTokens, as a real provider reports them:
// the reply itself is played whole (so that a test can send an oversized
// one), but it is charged no more than the cap.
//
// # Script format
//
// A script is one YAML document:
//
//	# optional: the name reported by Name() and Response.Model; default "scripted"
//	name: demo
//	turns:
//	  - thinking: "2+3 first, then 1."            # optional reasoning, shown as thinking
//	    text: "I'll add the numbers first."      # optional thought
//	    tools:                                    # optional tool calls, in order
//	      - name: add
//	        args: {a: 2, b: 3}                    # YAML mapping → JSON object
//	      - name: add
//	        raw_args: '{"a": 2,'                  # verbatim, may be invalid JSON
//	  - finish: {answer: "6", confidence: 0.9}    # shorthand for a finish tool call
//	  - expect: ['expected "5"']                  # the latest user message must contain these
//	    finish: {answer: "5", confidence: 0.95}
//	  - {}                                        # an empty reply (no blocks)
//	  - error: "overloaded"                       # Generate returns this as a Go error
//	  - delay: 50ms                               # wait before replying, honouring ctx
//	    text: slow
//	    usage: {input_tokens: 100, output_tokens: 20}   # instead of the estimate
//
// The top level is a mapping with two keys:
//
//   - name: optional string; the model's name. Default "scripted".
//   - turns: required list of turns; may be empty ([]), in which case the
//     first call is already past the end.
//
// Each turn is a mapping (write {} for an empty reply) with any of these keys:
//
//   - thinking: string. The model's reasoning, as one model.Thinking block
//     first in the reply (never read as the answer). An empty string means
//     none.
//   - text: string. The model's prose (its thought), as one text block.
//     An empty string means no text block.
//   - tools: list of tool calls, each a mapping with
//     name (required, non-empty string) and at most one of
//     args (a mapping, converted to a JSON object with keys in YAML order;
//     nested mappings become objects, lists arrays, null/true/false/numbers
//     their JSON counterparts, everything else a string) and
//     raw_args (a string used verbatim as the tool input, so it may be
//     invalid JSON: this is how a script sends malformed arguments).
//     With neither, the input is {}. A tool may be named "finish": that is
//     how a script sends a finish call with arguments of any shape.
//   - finish: shorthand for a tool call named "finish", a mapping with
//     answer (required string) and confidence (optional number). The input is
//     {"answer":...,"confidence":...}; confidence is left out when not given,
//     and is not range-checked, so scripts can send the out-of-range or
//     missing confidence that the loop must reject.
//   - expect: a string or list of non-empty strings that must each occur in
//     the latest user message of the request (the Text of all its blocks,
//     text and tool results alike, joined by newlines). If one does not,
//     Generate returns an error wrapping [ErrExpect] that names the turn's
//     file:line, the missing strings and an excerpt of what the message did
//     contain. This makes example scripts act as assertions.
//   - error: non-empty string. Generate returns it as a Go error, a
//     [*TurnError] whose message is exactly this string, as a transport
//     failure would be. Cannot be combined with thinking, text, tools, finish or usage;
//     can be combined with expect and delay.
//   - delay: a Go duration such as 50ms or 2s. Generate waits this long
//     before replying (or failing with error), and returns ctx.Err() as soon
//     as the request's context is done. An unmet expect fails at once.
//   - usage: mapping with input_tokens, output_tokens, cache_read_tokens and
//     cache_write_tokens (non-negative integers, each default 0). Replaces
//     the estimate as a whole.
//
// A turn may combine text, tools and finish: real models do, and the loop must
// cope. Plain scalars are taken as written, so answer: 6 is the string "6".
// Anchors and aliases may be used; merge keys (<<) may not.
//
// [Parse] and [Load] report every problem in a script at once, each as
// file:line: message (a [*ScriptError]): syntax errors, unknown or duplicate
// keys, values of the wrong type, a tool without a name, args and raw_args
// both set, a bad duration, an error turn with a reply, and so on.
//
// # Scripts in Go
//
// [Script], [Turn], [ToolCall] and [Finish] are the parsed form and can be
// built directly in Go tests. [Repeat] builds an N-step script for
// benchmarks. Preparing a Script computes every turn's reply ahead of time,
// so that Generate does no YAML or JSON work. A Script from [Parse] or
// [Prepare] is prepared, one from [Repeat] is prepared by its first New, and
// every [Model] made from such a Script (or a copy of it) by [New] shares that
// work, so New costs one small allocation; a Script literal is prepared anew
// by each New. Treat a Script as read-only once it has been used: changing a
// turn in place is not noticed (replacing Turns, or appending to it, is).
package scripted
