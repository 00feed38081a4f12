package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations bring the schema from version i to i+1; the version reached is
// kept in schema_version. Append only: a released migration never changes.
//
// Times are INTEGER microseconds since the Unix epoch (UTC), the precision
// PostgreSQL's timestamptz keeps, so both stores round-trip the same values.
// runs.last_seq mirrors the log's last Seq (kept in the same transaction) so
// an append's check is one row read; runs.labels keeps the labels in order
// as JSON and run_labels indexes them for filtering.
var migrations = []string{
	`CREATE TABLE runs (
		n           INTEGER PRIMARY KEY,
		id          TEXT    NOT NULL UNIQUE,
		parent      TEXT    NOT NULL,
		goal        TEXT    NOT NULL,
		labels      TEXT    NOT NULL,
		status      TEXT    NOT NULL,
		question    TEXT    NOT NULL,
		task        BLOB,
		result      BLOB,
		steps       INTEGER NOT NULL,
		cost_micros INTEGER NOT NULL,
		created     INTEGER NOT NULL,
		updated     INTEGER NOT NULL,
		last_seq    INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX runs_created ON runs (created DESC, n DESC);
	CREATE INDEX runs_parent ON runs (parent, created DESC);
	CREATE INDEX runs_status ON runs (status, created DESC);
	CREATE TABLE run_labels (
		label TEXT NOT NULL,
		run   TEXT NOT NULL REFERENCES runs (id),
		PRIMARY KEY (label, run)
	) WITHOUT ROWID;
	CREATE TABLE entries (
		run  TEXT    NOT NULL REFERENCES runs (id),
		seq  INTEGER NOT NULL,
		kind TEXT    NOT NULL,
		at   INTEGER NOT NULL,
		data BLOB    NOT NULL,
		PRIMARY KEY (run, seq)
	) WITHOUT ROWID;
	CREATE TABLE snapshots (
		run  TEXT    PRIMARY KEY REFERENCES runs (id),
		seq  INTEGER NOT NULL,
		data BLOB    NOT NULL
	) WITHOUT ROWID;`,
	// 2: the lease of the process carrying a run out.
	`ALTER TABLE runs ADD COLUMN holder TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN heartbeat INTEGER NOT NULL DEFAULT 0;`,
	// 3: ListRuns' cost and steps orders: without them a page of 10,000 runs
	// reads every row past its result to the column it sorts by.
	`CREATE INDEX runs_cost ON runs (cost_micros DESC, created DESC, n DESC);
	CREATE INDEX runs_steps ON runs (steps DESC, created DESC, n DESC);`,
	// 4: forks (the run and entry a run was forked from) and the messages
	// a person sends a running run, queued until its process logs them.
	`ALTER TABLE runs ADD COLUMN fork_of TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN fork_seq INTEGER NOT NULL DEFAULT 0;
	CREATE TABLE messages (
		id   INTEGER PRIMARY KEY AUTOINCREMENT,
		run  TEXT    NOT NULL REFERENCES runs (id),
		text TEXT    NOT NULL,
		at   INTEGER NOT NULL
	);
	CREATE INDEX messages_run ON messages (run, id);`,
	// 5: the provider limits every process on the database shares
	// (ledger.go): the slots of attempts, the tokens spent, the pauses.
	`CREATE TABLE limit_slots (
		id       INTEGER PRIMARY KEY,
		provider TEXT    NOT NULL,
		owner    TEXT    NOT NULL,
		replied  INTEGER,
		closed   INTEGER NOT NULL DEFAULT 0,
		lease    INTEGER NOT NULL
	);
	CREATE INDEX limit_slots_replied ON limit_slots (provider, replied);
	CREATE INDEX limit_slots_open ON limit_slots (provider) WHERE NOT closed;
	CREATE INDEX limit_slots_owner ON limit_slots (owner) WHERE NOT closed;
	CREATE TABLE limit_tokens (
		provider TEXT    NOT NULL,
		at       INTEGER NOT NULL,
		tokens   INTEGER NOT NULL
	);
	CREATE INDEX limit_tokens_provider ON limit_tokens (provider, at);
	CREATE TABLE limit_pauses (
		provider TEXT    PRIMARY KEY,
		until    INTEGER NOT NULL
	) WITHOUT ROWID;`,
}

// migrate brings the database on c to the newest schema in one immediate
// transaction, so two processes opening a new file do not both migrate.
func migrate(ctx context.Context, c *sql.Conn) (err error) {
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			c.ExecContext(context.Background(), "ROLLBACK")
			return
		}
		_, err = c.ExecContext(ctx, "COMMIT")
	}()
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var v int
	switch err := c.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); err {
	case nil:
	case sql.ErrNoRows:
		if _, err := c.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	default:
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this build knows (%d)", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if _, err := c.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if v < len(migrations) {
		if _, err := c.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(migrations)); err != nil {
			return err
		}
	}
	return nil
}
