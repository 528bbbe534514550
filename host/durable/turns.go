package durable

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agenthost/agenthost/host"
)

// The index of unfinished turns. The engine keeps every turn's workflow
// and lists a session's by a prefix of their ids, which does not use an
// index (PostgreSQL's collations) and reads every workflow the prefix
// matches, finished or not. The adapter keeps its own table of the turns
// it started and has not seen finish, agenthost_turns (session_id,
// turn_id), indexed by session: a session's candidates are one indexed
// read, and the engine is asked about those alone, by id (its primary
// key). The engine's status stays the truth: a row whose workflow ended
// (finished, failed, cancelled, given up) is dropped when it is seen; a
// pending workflow without a row (a database written before this table)
// gets one when the engine starts (indexPending).
//
// Each row is written with a lazy commit (commit.go), through the pool
// kept for it (so that no connection of the engine's pool switches its
// mode for it): it is written just before the engine's flushed insert of
// the turn's workflow, which flushes it, and removed just before the
// engine's flushed record of the turn's outcome.

// pendingStatuses are the engine's statuses of an unfinished turn.
var pendingStatuses = []dbos.WorkflowStatusType{dbos.WorkflowStatusPending, dbos.WorkflowStatusEnqueued}

// addTurn records the turn id of session as unfinished.
func (s *Store) addTurn(ctx context.Context, id, session string) error {
	_, err := s.lazyDB().ExecContext(lazyCommits(ctx), s.d.rebind(`INSERT INTO agenthost_turns (turn_id, session_id) VALUES ($1, $2)
		ON CONFLICT (turn_id) DO NOTHING`), id, session)
	if err != nil {
		return fmt.Errorf("durable: record the turn: %w", err)
	}
	return nil
}

// lazyDB is the handle of the index's lazy writes.
func (s *Store) lazyDB() *sql.DB {
	if s.lazy != nil {
		return s.lazy
	}
	return s.db
}

// dropTurns forgets the turns (finished, or found ended).
func (s *Store) dropTurns(ctx context.Context, ids ...string) error {
	for _, id := range ids {
		if _, err := s.lazyDB().ExecContext(lazyCommits(ctx), s.d.rebind(`DELETE FROM agenthost_turns WHERE turn_id = $1`), id); err != nil {
			return fmt.Errorf("durable: forget the turn: %w", err)
		}
	}
	return nil
}

// candidateTurns are the session's turns in the index, oldest first (a
// turn id sorts by its start: host's newTurnID).
func (s *Store) candidateTurns(ctx context.Context, session string) ([]string, error) {
	rows, err := s.db.QueryContext(anyCommits(ctx), s.d.rebind(`SELECT turn_id FROM agenthost_turns WHERE session_id = $1 ORDER BY turn_id`), session)
	if err != nil {
		return nil, fmt.Errorf("durable: list turns: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("durable: list turns: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// pendingTurns are the session's unfinished turns: the index's candidates
// the engine still holds unfinished; the others are dropped from the
// index.
func (e *Engine) pendingTurns(ctx context.Context, sessionID string) ([]string, error) {
	ids, err := e.store.candidateTurns(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	// A turn whose workflow runs here is unfinished; the engine is asked
	// about the others. One that runs here may have no row: its answer's
	// append took it out (Store.append) before its outcome was recorded,
	// and a process that stopped between the two left it to be taken up
	// again (the taken-up run replays it to its end, running nothing).
	var pending, ask []string
	e.runMu.Lock()
	here := e.running[sessionID]
	for _, id := range ids {
		if _, ok := here[id]; ok {
			pending = append(pending, id)
		} else {
			ask = append(ask, id)
		}
	}
	for id := range here {
		if !slices.Contains(ids, id) {
			pending = append(pending, id)
		}
	}
	e.runMu.Unlock()
	if len(ids) == 0 {
		slices.Sort(pending)
		return pending, nil
	}
	if len(ask) > 0 {
		list, err := dbos.ListWorkflows(e.dbos, dbos.WithFilterWorkflowIDs(ask...), dbos.WithFilterName(workflowName),
			dbos.WithFilterStatus(pendingStatuses...), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
		if err != nil {
			return nil, fmt.Errorf("durable: list turns: %w", err)
		}
		for _, w := range list {
			pending = append(pending, w.ID)
		}
	}
	slices.Sort(pending)
	var ended []string
	for _, id := range ids {
		if _, ok := slices.BinarySearch(pending, id); !ok {
			ended = append(ended, id)
		}
	}
	if len(ended) > 0 {
		_ = e.store.dropTurns(ctx, ended...) // seen again next time if this fails
	}
	return pending, nil
}

// indexPending gives every unfinished turn of the engine a row in the
// index (a database written before the index existed, or a row lost): one
// listing of the engine's unfinished turns when it starts.
func (e *Engine) indexPending(ctx context.Context) error {
	list, err := dbos.ListWorkflows(e.dbos, dbos.WithFilterName(workflowName), dbos.WithFilterStatus(pendingStatuses...),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return fmt.Errorf("durable: list unfinished turns: %w", err)
	}
	if len(list) == 0 {
		return nil
	}
	indexed, err := e.store.indexedTurns(ctx)
	if err != nil {
		return err
	}
	for _, w := range list {
		if indexed[w.ID] {
			continue
		}
		session, ok := host.TurnSession(w.ID)
		if !ok {
			continue
		}
		if err := e.store.addTurn(ctx, w.ID, session); err != nil {
			return err
		}
	}
	return nil
}

// indexedTurns is the set of turn ids in the index.
func (s *Store) indexedTurns(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT turn_id FROM agenthost_turns`)
	if err != nil {
		return nil, fmt.Errorf("durable: list turns: %w", err)
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("durable: list turns: %w", err)
		}
		set[id] = true
	}
	return set, rows.Err()
}

// forgetSessionTurns drops the index's rows of a deleted session.
func (s *Store) forgetSessionTurns(ctx context.Context, session string) error {
	if _, err := s.db.ExecContext(ctx, s.d.rebind(`DELETE FROM agenthost_turns WHERE session_id = $1`), session); err != nil {
		return fmt.Errorf("durable: forget the turns: %w", err)
	}
	return nil
}
