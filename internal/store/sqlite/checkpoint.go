package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// Checkpoints mostly off the writer's path. SQLite's automatic checkpoint
// runs inside the commit that takes the write-ahead log past 1,000 pages,
// on the committing connection: here, the one writer every group commit
// waits for. Measured with `memgate bench writes --embedder none` (16
// clients), it was three quarters of a commit's time (0.85 of 1.06 ms a
// group) and kept the writer busy 94% of the wall clock: writes stopped at
// about 2,300/s with CPU to spare.
//
// So the Store's checkpointer copies the log into the database on a
// connection of its own, in PASSIVE mode, which never waits for (or
// blocks) the writer or readers. A checkpoint that runs while commits
// append can never finish, though, and the log restarts from its start
// only after a checkpoint finished: with the writer's own checkpoint off,
// the log grew by 140 MB/s. The writer therefore keeps its automatic
// checkpoint, at logRestartPages instead of 1,000: by then the checkpointer
// has copied nearly all of the log, the writer copies the rest, and the
// next transaction restarts the log. The log stays under about 70 MB
// (measured over a 30 s run), and the same bench writes about 2,850/s.
//
// Durability is unchanged: a commit is durable once it is in the log
// (synchronous NORMAL or FULL decide as before); a checkpoint only moves
// committed pages into the database file. Scrub's truncating checkpoint
// (erasure) runs on the writer connection as before.

// logRestartPages is the writer's automatic checkpoint threshold (pages of
// 4 KiB): the bound of the log's size.
const logRestartPages = 16000

// checkpointEvery spaces the checkpointer's runs under a steady stream of
// commits: each run copies what about 100 ms of writes appended (a few
// thousand pages at full speed), so a page written many times is copied
// once per run, and its fsyncs stay off the commits' path.
const checkpointEvery = 100 * time.Millisecond

// committed tells the checkpointer that the log has grown. It never blocks
// the writer.
func (s *Store) committed() {
	select {
	case s.ckptWake <- struct{}{}:
	default:
	}
}

// checkpointer runs until Close: after commits, at most once per
// checkpointEvery, a PASSIVE checkpoint on its own connection. A failure
// (a lock held by another process's connection, a full disk) is left to the
// next run or to the writer's own checkpoint.
func (s *Store) checkpointer(db *sql.DB) {
	defer db.Close()
	pause := time.NewTimer(checkpointEvery)
	pause.Stop() // armed after each run
	for {
		select {
		case <-s.closing:
			pause.Stop()
			return
		case <-s.ckptWake:
		}
		var busy, logPages, done int
		s.ckptMu.Lock()
		_ = db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done)
		s.ckptMu.Unlock()
		s.ckptRuns.Add(1)
		pause.Reset(checkpointEvery)
		select {
		case <-s.closing:
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}
