# Sourced by test.sh: start_postgres starts a throwaway PostgreSQL cluster for
# the store/postgres tests and exports its DSN as RATCHET_TEST_POSTGRES_DSN;
# stop_postgres stops it and removes its files (test.sh traps EXIT to it).
#
# The cluster lives in a temporary directory, listens only on a unix socket
# there (no TCP port to collide with), trusts local connections, and keeps
# fsync on so the durability figures mean something. PostgreSQL refuses to
# run as root, so as root the server runs as the postgres user that Debian's
# package creates.

pg_dir=""
pg_bin=""

# pg_as runs a PostgreSQL binary as the user that owns the cluster, from a
# directory that user can read.
pg_as() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd / && runuser -u postgres -- "$@")
	else
		(cd / && "$@")
	fi
}

start_postgres() {
	pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
		apt_install postgresql
		pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	fi
	pg_dir=$(mktemp -d /tmp/ratchet-pg.XXXXXX)
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$pg_dir"
	fi
	echo "== postgres: throwaway cluster in $pg_dir ($($pg_bin/postgres --version))"
	pg_as "$pg_bin/initdb" --no-sync --no-instructions --auth=trust --username=ratchet \
		--encoding=UTF8 --locale=C -D "$pg_dir/data" >"$pg_dir/initdb.log" 2>&1 ||
		{ cat "$pg_dir/initdb.log"; return 1; }
	pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
		-o "-c listen_addresses='' -k $pg_dir -c max_connections=300 -c fsync=on -c synchronous_commit=on" \
		start >/dev/null ||
		{ cat "$pg_dir/server.log"; return 1; }
	pg_as "$pg_bin/createdb" -h "$pg_dir" -U ratchet ratchet
	export RATCHET_TEST_POSTGRES_DSN="host=$pg_dir user=ratchet dbname=ratchet sslmode=disable"
}

stop_postgres() {
	if [ -n "$pg_dir" ] && [ -d "$pg_dir" ]; then
		pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
		rm -rf "$pg_dir"
	fi
}
