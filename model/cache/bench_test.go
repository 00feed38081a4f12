package cache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ratchetloop/ratchet/model"
)

// BenchmarkHit is the cost of answering a 20-message request from the
// cache: keying it and reading the reply back.
func BenchmarkHit(b *testing.B) {
	c := open(b, b.TempDir(), nil)
	r := req("q")
	for i := range 20 {
		r.Messages = append(r.Messages, model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock(fmt.Sprintf("turn %d of a long conversation with some text in it", i))}})
	}
	inner := &counting{}
	c.Wrap(inner, "", "").Generate(context.Background(), r)
	b.ResetTimer()
	for range b.N {
		if got, _ := c.Wrap(inner, "", "").Generate(context.Background(), r); !got.Cached {
			b.Fatal("missed")
		}
	}
}
