package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ensureFence makes sure the fence sequence exists and gives increasing
// fences, once per Locker: it looks it up and, if missing, creates it.
// Creation racing another client's is fine. If it cannot be created, the
// error is a *FenceSetupError; if it exists with settings that break
// fence order, a *FenceSequenceError.
func (l *Locker) ensureFence(ctx context.Context, c *conn) error {
	if l.fenceReady.Load() {
		return nil
	}
	l.fenceMu.Lock()
	defer l.fenceMu.Unlock()
	if l.fenceReady.Load() {
		return nil
	}
	exists, err := l.checkSequence(ctx, c)
	if err != nil {
		return err
	}
	if !exists {
		if err := request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error {
			_, err := c.Exec(ctx, l.sql.seqCreate)
			return err
		}); err != nil {
			pe, ok := pgError(err)
			switch {
			case ok && (pe.Code == codeDuplicateTable || pe.Code == codeUniqueViolation):
				// created concurrently by another client
			case ok:
				return l.fenceError(err)
			default:
				return wrap("create the fence sequence", errors.Join(errNotQueued, err))
			}
		}
		if _, err := l.checkSequence(ctx, c); err != nil { // another client's may have won
			return err
		}
	}
	l.fenceReady.Store(true)
	return nil
}

// checkSequence looks the fence sequence up: false if it is missing; a
// *FenceSequenceError if it exists but cannot give increasing fences.
func (l *Locker) checkSequence(ctx context.Context, c *conn) (exists bool, err error) {
	var isSeq, cycle bool
	var increment, cache, minValue, start int64
	var last *int64
	err = request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error {
		return c.QueryRow(ctx, l.sql.seqCheck).Scan(&isSeq, &increment, &cache, &cycle, &minValue, &start, &last)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, wrap("look up the fence sequence", errors.Join(errNotQueued, err))
	case !isSeq:
		return true, &FenceSequenceError{
			Sequence: l.sql.seqIdent,
			Problems: []string{"it is not a sequence"},
			Fix:      "name another sequence in Options.FenceSequence (URL fence_sequence), or rename the relation " + l.sql.seqIdent,
		}
	}
	var problems, fix []string
	if increment < 1 || minValue < 1 {
		if increment < 1 {
			problems = append(problems, fmt.Sprintf("INCREMENT BY %d (fences would decrease)", increment))
		}
		if minValue < 1 {
			problems = append(problems, fmt.Sprintf("MINVALUE %d (fences of 0 or below)", minValue))
		}
		// Restart above every value handed out.
		next := max(start, 0)
		if last != nil {
			next = max(next, *last)
		}
		if next < math.MaxInt64 {
			next++
		}
		fix = append(fix, fmt.Sprintf("INCREMENT BY 1 MINVALUE 1 NO MAXVALUE START WITH %d RESTART", next))
	}
	if cycle {
		problems = append(problems, "CYCLE (fences would wrap around)")
		fix = append(fix, "NO CYCLE")
	}
	if cache > 1 {
		problems = append(problems, fmt.Sprintf("CACHE %d (each session draws fences from a block of its own)", cache))
		fix = append(fix, "CACHE 1")
	}
	if len(problems) == 0 {
		return true, nil
	}
	return true, &FenceSequenceError{
		Sequence: l.sql.seqIdent,
		Problems: problems,
		Fix:      "ALTER SEQUENCE " + l.sql.seqIdent + " " + strings.Join(fix, " ") + ";",
	}
}

// fenceError explains a missing or forbidden fence sequence.
func (l *Locker) fenceError(err error) error {
	user := "<the locking role>"
	if u := l.pool.cfg.User; u != "" {
		user = u
	}
	seq := l.sql.seqIdent
	return &FenceSetupError{
		Sequence: seq,
		Fix:      fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s AS bigint; GRANT USAGE ON SEQUENCE %s TO %s;", seq, seq, user),
		Err:      err,
	}
}
