package cache

// EncodeReply is encodeReply, for the fuzz test's round trip.
var EncodeReply = encodeReply
