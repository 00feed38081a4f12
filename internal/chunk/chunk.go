// Package chunk sizes the arrays of a run's log records. Once recorded, an
// event or command is pointed at from the log, so its array is only ever
// filled, never reused or moved; records are allocated a chunk at a time to
// save an allocation each. Chunks start small, so that ten thousand short
// runs waste little, and double up to a limit (16 by default), so that a
// long run allocates once per chunk and leaves little of its last unused.
package chunk

const (
	first = 4
	limit = 16
)

// Sizer hands out chunk sizes for one growing sequence. The zero value is
// ready.
type Sizer struct {
	// Limit caps the chunk size; 0 means 16.
	Limit int
	next  int
}

// Next returns the size of the next chunk and doubles the one after.
func (z *Sizer) Next() int {
	lim := z.Limit
	if lim <= 0 {
		lim = limit
	}
	n := min(max(z.next, first), lim)
	z.next = min(2*n, lim)
	return n
}

// Reserve returns s with room for n more elements past its length. If s
// has too little, its elements are copied to a new array of a chunk's size
// (or n more, if larger): they must not have been pointed at yet.
func Reserve[T any](s []T, n int, z *Sizer) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	return append(make([]T, 0, len(s)+max(z.Next(), n)), s...)
}
