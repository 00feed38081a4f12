package runner

import (
	"context"
	"testing"
	"time"
)

func TestDeadlinesShareAndCancel(t *testing.T) {
	d := &deadlines{parent: context.Background()}
	if got := d.bound(time.Time{}); got != context.Background() {
		t.Fatalf("no deadline: got %v, want the parent", got)
	}
	t1 := time.Now().Add(time.Hour)
	a := d.bound(t1)
	if dl, ok := a.Deadline(); !ok || !dl.Equal(t1) {
		t.Fatalf("deadline %v %v, want %v", dl, ok, t1)
	}
	if b := d.bound(t1); b != a {
		t.Fatal("a command with the same deadline got a context of its own")
	}
	b := d.bound(t1.Add(time.Minute))
	if b == a {
		t.Fatal("a command with another deadline got the previous context")
	}
	// The replaced context may still be in use by its batch.
	if a.Err() != nil {
		t.Fatal("a context was cancelled while its batch may still run")
	}
	d.batchDone()
	if a.Err() == nil {
		t.Fatal("a replaced context outlived its batch")
	}
	if b.Err() != nil {
		t.Fatal("the latest context was cancelled with the batch")
	}
	d.stop()
	if b.Err() == nil {
		t.Fatal("the latest context outlived the drive")
	}
}
