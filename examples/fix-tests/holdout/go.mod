// This go.mod only keeps the hidden test out of ratchet's own module (go
// vet ./... and go test ./... there); the holdout check mounts the test
// file alone into the workspace's module.
module invoice/holdout

go 1.26
