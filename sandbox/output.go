package sandbox

import (
	"fmt"
	"sync"
)

// capture keeps the first and the last bytes written to it, at most limit
// in all, and counts the rest: memory stays bounded however much the
// candidate prints. Writes never fail, so the pipe is always drained.
type capture struct {
	mu    sync.Mutex
	head  []byte // up to cap(head)
	tail  []byte // ring buffer of len(tail) bytes
	tpos  int    // next write position in tail
	tfull bool   // the ring has wrapped
	total int64
}

func newCapture(limit int) *capture {
	tailN := limit / 2
	return &capture{head: make([]byte, 0, limit-tailN), tail: make([]byte, tailN)}
}

// Write implements io.Writer.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := cap(c.head) - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || len(c.tail) == 0 {
		return n, nil
	}
	if len(p) >= len(c.tail) {
		copy(c.tail, p[len(p)-len(c.tail):])
		c.tpos, c.tfull = 0, true
		return n, nil
	}
	k := copy(c.tail[c.tpos:], p)
	if k < len(p) {
		copy(c.tail, p[k:])
		c.tfull = true
	}
	c.tpos = (c.tpos + len(p)) % len(c.tail)
	if c.tpos == 0 {
		c.tfull = true
	}
	return n, nil
}

// result returns the kept bytes, whether some were dropped, and the total.
func (c *capture) result() ([]byte, bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var tail []byte
	if c.tfull {
		tail = append(append(tail, c.tail[c.tpos:]...), c.tail[:c.tpos]...)
	} else {
		tail = c.tail[:c.tpos]
	}
	kept := int64(len(c.head) + len(tail))
	out := append([]byte(nil), c.head...)
	truncated := c.total > kept
	if truncated {
		out = fmt.Appendf(out, "\n[... sandbox: %d bytes omitted ...]\n", c.total-kept)
	}
	return append(out, tail...), truncated, c.total
}
