package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratchetloop/ratchet/store"
)

// errClosed is returned by appends after Close.
var errClosed = errors.New("store is closed")

// writer commits the appends of many runs together. Each of its goroutines
// takes the appends pending when it is free and commits them in one
// transaction; appends queue up on their own while a commit waits for the
// server's fsync, so a lone append pays one commit and a hundred share a
// few.
type writer struct {
	pool     *pgxpool.Pool
	maxBatch int
	reqs     chan *appendReq
	closing  chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

type appendReq struct {
	ctx     context.Context
	run     string
	entries []store.Entry
	done    chan error
}

func startWriter(pool *pgxpool.Pool, n, maxBatch int) *writer {
	w := &writer{
		pool:     pool,
		maxBatch: maxBatch,
		reqs:     make(chan *appendReq),
		closing:  make(chan struct{}),
	}
	for range n {
		w.wg.Go(w.loop)
	}
	return w
}

// append hands the entries to a writer goroutine and waits for the outcome.
// If ctx ends before a goroutine takes them, nothing is written.
func (w *writer) append(ctx context.Context, run string, entries []store.Entry) error {
	r := &appendReq{ctx: ctx, run: run, entries: entries, done: make(chan error, 1)}
	select {
	case w.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return errClosed
	}
	return <-r.done
}

// close stops the goroutines once their batches in flight are committed.
func (w *writer) close() {
	w.once.Do(func() {
		close(w.closing)
		w.wg.Wait()
	})
}

func (w *writer) loop() {
	var (
		batch, carry []*appendReq
		inBatch      = map[string]bool{}
	)
	// add puts r in the batch, or carries it over to the next one if its run
	// is already in this one: a batch moves each run's log once.
	add := func(r *appendReq) {
		if inBatch[r.run] {
			carry = append(carry, r)
			return
		}
		inBatch[r.run] = true
		batch = append(batch, r)
	}
	for {
		batch = batch[:0]
		clear(inBatch)
		waiting := carry
		carry = nil
		for _, r := range waiting {
			add(r)
		}
		if len(batch) == 0 {
			select {
			case r := <-w.reqs:
				add(r)
			case <-w.closing:
				return
			}
		}
	fill:
		for len(batch) < w.maxBatch {
			select {
			case r := <-w.reqs:
				add(r)
			default:
				break fill
			}
		}
		w.commit(batch)
	}
}

// commit commits batch and tells each append its outcome. If the batch's
// statement fails (one append's bad data, say), each append is retried
// alone so that only the culprit fails.
func (w *writer) commit(batch []*appendReq) {
	errs := make([]error, len(batch))
	var live []int
	for i, r := range batch {
		if errs[i] = r.ctx.Err(); errs[i] == nil {
			live = append(live, i)
		}
	}
	if len(live) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		if err := w.commitSome(ctx, batch, live, errs); err != nil {
			if len(live) == 1 || !retriable(err) {
				for _, i := range live {
					errs[i] = err
				}
			} else {
				for _, i := range live {
					if err := w.commitSome(ctx, batch, []int{i}, errs); err != nil {
						errs[i] = err
					}
				}
			}
		}
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}

// retriable reports whether a failed batch certainly wrote nothing, so its
// appends can be tried again one by one: the server refused it. Any other
// failure (a lost connection, say) may have come after the commit.
func retriable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// appendSQL appends many runs' entries in one statement, hence one
// transaction and one round trip. It locks the runs' rows in ID order (two
// writers never deadlock), moves last_seq only for the runs whose entries
// start right after it, inserts those runs' entries, and returns the runs
// it moved. Under concurrent writers the row lock makes the later one see
// the moved last_seq and match nothing.
const appendSQL = `
WITH req AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS r (id, first, last)
), locked AS (
	SELECT id FROM runs WHERE id = ANY($1) ORDER BY id FOR UPDATE
), moved AS (
	UPDATE runs SET last_seq = req.last
	FROM req JOIN locked USING (id)
	WHERE runs.id = req.id AND runs.last_seq = req.first - 1
	RETURNING runs.id
), ins AS (
	INSERT INTO entries (run, seq, kind, at, data)
	SELECT e.run, e.seq, e.kind, e.at, e.data
	FROM unnest($4::text[], $5::bigint[], $6::text[], $7::timestamptz[], $8::bytea[]) AS e (run, seq, kind, at, data)
	WHERE e.run IN (SELECT id FROM moved)
)
SELECT id FROM moved`

// commitSome appends batch[i] for each i in idx (all of different runs) in
// one statement. An append that does not continue its run's log (or whose
// run is missing) gets its error in errs; the returned error fails them
// all.
func (w *writer) commitSome(ctx context.Context, batch []*appendReq, idx []int, errs []error) error {
	var (
		ids, runs, kinds []string
		firsts, lasts    []int64
		seqs             []int64
		ats              []time.Time
		datas            [][]byte
	)
	for _, i := range idx {
		r := batch[i]
		ids = append(ids, r.run)
		firsts = append(firsts, r.entries[0].Seq)
		lasts = append(lasts, r.entries[len(r.entries)-1].Seq)
		for _, e := range r.entries {
			runs = append(runs, r.run)
			seqs = append(seqs, e.Seq)
			kinds = append(kinds, e.Kind)
			ats = append(ats, e.At)
			datas = append(datas, nonNil(e.Data))
		}
	}
	rows, err := w.pool.Query(ctx, appendSQL, ids, firsts, lasts, runs, seqs, kinds, ats, datas)
	if err != nil {
		return err
	}
	moved, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(moved) == len(idx) {
		return nil
	}
	// Some did not continue their logs: say where each log ends.
	done := make(map[string]bool, len(moved))
	for _, id := range moved {
		done[id] = true
	}
	var failed []string
	for _, i := range idx {
		if !done[batch[i].run] {
			failed = append(failed, batch[i].run)
		}
	}
	rows, err = w.pool.Query(ctx, `SELECT id, last_seq FROM runs WHERE id = ANY($1)`, failed)
	if err != nil {
		return err
	}
	ends := map[string]int64{}
	var (
		id  string
		end int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &end}, func() error {
		ends[id] = end
		return nil
	}); err != nil {
		return err
	}
	for _, i := range idx {
		r := batch[i]
		if done[r.run] {
			continue
		}
		if end, ok := ends[r.run]; ok {
			errs[i] = fmt.Errorf("%w: entries start at %d, the log ends at %d", store.ErrConflict, r.entries[0].Seq, end)
		} else {
			errs[i] = store.ErrNotFound
		}
	}
	return nil
}
