package model

// The token estimate is tokenizer-free: the bytes a request carries (the
// system prompt; each tool's name, description and schema; each block's
// text, arguments, tool name and call ID) plus a fixed overhead per tool,
// message and block for the provider's framing, divided by BytesPerToken
// and rounded up. Byte-pair tokenizers average about 4 bytes per token on
// English prose and 3 to 4 on code and JSON, so the estimate is close for
// prose and errs low on dense JSON; loop's TestEstimateCalibration measures
// it against real tokenizer counts. The loop budgets with it, and a
// provider bills with it what a reply cut off before its usage arrived
// cost.
const (
	BytesPerToken   = 4
	MessageOverhead = 16 // bytes per message: role and turn markers
	BlockOverhead   = 8  // bytes per content block: its type and separators
	ToolOverhead    = 32 // bytes per tool definition: the JSON around it
)

// EstimateTokens estimates req's input tokens as described above.
func EstimateTokens(req Request) int64 {
	n := int64(len(req.System)) + ToolsWeight(req.Tools)
	for _, msg := range req.Messages {
		n += MessageWeight(msg)
	}
	return TokensOf(n)
}

// TokensOf is the estimate of a weight's tokens: its bytes divided by
// BytesPerToken, rounded up.
func TokensOf(weight int64) int64 { return (weight + BytesPerToken - 1) / BytesPerToken }

// BlockWeight is b's weight in the estimate: its bytes and overhead.
func BlockWeight(b Block) int64 {
	return int64(len(b.Text)+len(b.Input)+len(b.Name)+len(b.ID)) + BlockOverhead
}

// MessageWeight is msg's weight in the estimate.
func MessageWeight(msg Message) int64 {
	n := int64(MessageOverhead)
	for _, b := range msg.Content {
		n += BlockWeight(b)
	}
	return n
}

// ToolsWeight is the weight of a request's tool list in the estimate.
func ToolsWeight(tools []ToolSpec) int64 {
	var n int64
	for _, t := range tools {
		n += int64(len(t.Name)+len(t.Description)+len(t.InputSchema)) + ToolOverhead
	}
	return n
}
