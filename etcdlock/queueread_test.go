package etcdlock_test

import (
	"context"
	"testing"
)

// TestQueueRead checks the waiter's read after its predecessor's deletion
// directly, on entries written by hand: ahead = the entry in front of
// mine. Whatever the read is served by (the member, or the leader as the
// fallback), it must report an entry ahead while one exists, none once it
// is deleted, and a missing own entry as missing.
func TestQueueRead(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	l := c.locker(t, "q", nil)
	admin := c.admin(t)
	key := "queue-read"
	pfx := l.Prefix(key)
	if _, err := admin.Put(ctx, pfx+"a", "ahead"); err != nil {
		t.Fatal(err)
	}
	put, err := admin.Put(ctx, pfx+"b", "mine")
	if err != nil {
		t.Fatal(err)
	}
	my, rev := pfx+"b", put.Header.Revision

	// A deletion was seen (of some other entry) at the current revision,
	// but the entry ahead is still there: the member's read shows it, so
	// the leader decides, and shows it too.
	for _, gone := range []int64{0, rev} {
		_, mine, ahead, err := l.QueueRead(ctx, key, my, rev, gone)
		if err != nil || !mine || ahead != 1 {
			t.Fatalf("gone %d, entry ahead present: mine %v, ahead %d, err %v; want mine, 1 ahead", gone, mine, ahead, err)
		}
	}

	del, err := admin.Delete(ctx, pfx+"a")
	if err != nil {
		t.Fatal(err)
	}
	g := del.Header.Revision
	revision, mine, ahead, err := l.QueueRead(ctx, key, my, rev, g)
	if err != nil || !mine || ahead != 0 || revision < g {
		t.Fatalf("after the deletion at %d: revision %d, mine %v, ahead %d, err %v; want revision >= %d, mine, none ahead", g, revision, mine, ahead, err, g)
	}

	// A deletion the member cannot have applied yet (a revision not
	// reached): the member's read is not trusted, the leader's is.
	revision, mine, ahead, err = l.QueueRead(ctx, key, my, rev, g+1000)
	if err != nil || !mine || ahead != 0 || revision >= g+1000 {
		t.Fatalf("gone beyond the cluster's revision: revision %d, mine %v, ahead %d, err %v", revision, mine, ahead, err)
	}

	// The own entry went (its lease expired or was revoked): reported
	// missing by either read.
	if _, err := admin.Delete(ctx, my); err != nil {
		t.Fatal(err)
	}
	_, mine, _, err = l.QueueRead(ctx, key, my, rev, g)
	if err != nil || mine {
		t.Fatalf("own entry deleted: mine %v, err %v; want it reported missing", mine, err)
	}

	// Created again (a late try of the enqueue): another entry under the
	// same name, still missing for the waiter that queued at rev.
	if _, err := admin.Put(ctx, my, "mine again"); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []int64{0, g} {
		_, mine, _, err = l.QueueRead(ctx, key, my, rev, gone)
		if err != nil || mine {
			t.Fatalf("own entry re-created (gone %d): mine %v, err %v; want it reported missing", gone, mine, err)
		}
	}
}
