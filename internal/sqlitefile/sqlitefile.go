// Package sqlitefile opens SQLite files the one way ratchet's stores do:
// a busy timeout on every connection, and WAL mode switched on safely when
// many processes open one new file at once.
package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	driver "modernc.org/sqlite"
)

// DSN is the data source name of the file at path: busy_timeout first
// (the pragmas after it may need the lock), then pragmas such as
// "synchronous(FULL)".
func DSN(path string, busyTimeout time.Duration, pragmas ...string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Querier is a *sql.DB or a *sql.Conn.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// WAL switches the file to WAL mode. The switch takes an exclusive lock
// without waiting in the busy handler, so another process opening the same
// new file at once makes it fail at once: it is tried again until
// busyTimeout. A file system without shared memory (some network ones)
// keeps another mode, which is an error.
func WAL(ctx context.Context, q Querier, busyTimeout time.Duration) error {
	var mode string
	for wait := time.Now().Add(busyTimeout); ; {
		err := q.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			break
		}
		if !Busy(err) || time.Now().After(wait) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not wal (WAL needs a local file system)", mode)
	}
	return nil
}

// Busy reports whether err is SQLITE_BUSY (in any of its extended forms).
func Busy(err error) bool {
	var e *driver.Error
	return errors.As(err, &e) && e.Code()&0xff == 5
}
