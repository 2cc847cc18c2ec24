package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcdFloor is the bare protocol B3 asks for, on a raw client, with
// nothing else: the fewest requests a FIFO queue lock over etcd that
// pushes its hand-offs can make. It is a control, not a lock anyone
// should use: no try timeouts, no validity, no retries, no check of its
// own lease (a failed wait only deletes its entry).
//
//   - acquire: one transaction creates the entry (the session's lease ID
//     under the lock's prefix, as concurrency.Mutex writes it) and reads
//     the entry just ahead of it;
//   - wait: a watch on that entry from the member's current revision (so
//     the member serves it as soon as the deletion commits), one point
//     read if the member had passed the read when the watch started, and
//     after the deletion one read of the entry just ahead (served by the
//     member once it has applied the deletion, else linearizable);
//   - release: one delete.
//
// Its watches share one stream per client, kept open by an idle watch
// (as etcdlock's stream keeper does), since opening a gRPC stream per
// wait is work that no implementation needs. ours/floor is what etcdlock
// adds to the protocol; floor/peer is the most any client of the protocol
// can gain over the peer.
type etcdFloor struct {
	cli *clientv3.Client
	s   *concurrency.Session
}

// etcdFloors returns k floor contenders over up to maxLockers clients,
// each with its stream kept open until b ends, and one session each.
func etcdFloors(b testing.TB, e *etcdCluster, k int) []contender {
	b.Helper()
	n := min(k, maxLockers)
	clis := make([]*clientv3.Client, n)
	for i := range clis {
		clis[i] = e.client(b)
		ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
		b.Cleanup(cancel)
		wch := clis[i].Watch(ctx, "\x00bench-floor-stream", clientv3.WithRev(keeperRevFloor))
		go func() {
			for range wch { // nothing comes; drained so that nothing could block the stream
			}
		}()
	}
	out := make([]contender, k)
	for i := range out {
		out[i] = etcdFloor{clis[i%n], session(b, clis[i%n])}
	}
	return out
}

// keeperRevFloor is a revision no cluster reaches: the idle watch never
// reports anything.
const keeperRevFloor = int64(1) << 62

func (f etcdFloor) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	pfx := key + "/"
	my := fmt.Sprintf("%s%x", pfx, f.s.Lease())
	resp, err := f.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(my), "=", 0)).
		Then(clientv3.OpPut(my, "", clientv3.WithLease(f.s.Lease())),
			clientv3.OpGet(pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2))).
		Commit()
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, errors.New("floor: entry already there")
	}
	release := func(ctx context.Context) error {
		_, err := f.cli.Delete(ctx, my)
		return err
	}
	rev, read := resp.Header.Revision, resp.Header.Revision
	kvs := resp.Responses[1].GetResponseRange().Kvs
	for len(kvs) == 2 || (len(kvs) == 1 && kvs[0].CreateRevision != rev) {
		pred := kvs[len(kvs)-1]
		gone, err := f.watch(ctx, pred, read)
		if err != nil {
			_ = release(context.Background())
			return nil, err
		}
		r, err := f.read(ctx, pfx, rev, gone)
		if err != nil {
			_ = release(context.Background())
			return nil, err
		}
		kvs, read = r.Kvs, r.Header.Revision
	}
	return release, nil
}

// watch waits for pred, found by a read at revision read, to be deleted,
// and returns the deletion's revision (0 if it went before the watch
// started).
func (f etcdFloor) watch(ctx context.Context, pred *mvccpb.KeyValue, read int64) (int64, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range f.cli.Watch(wctx, string(pred.Key), clientv3.WithCreatedNotify()) {
		if err := wr.Err(); err != nil {
			return 0, err
		}
		if wr.Created {
			if wr.Header.Revision > read {
				g, err := f.cli.Get(ctx, string(pred.Key), clientv3.WithSerializable())
				if err != nil {
					return 0, err
				}
				if g.Header.Revision < wr.Header.Revision {
					if g, err = f.cli.Get(ctx, string(pred.Key)); err != nil {
						return 0, err
					}
				}
				if len(g.Kvs) == 0 || g.Kvs[0].CreateRevision != pred.CreateRevision {
					return 0, nil
				}
			}
			continue
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > read {
				return ev.Kv.ModRevision, nil
			}
		}
	}
	return 0, errors.Join(errors.New("floor: watch ended"), ctx.Err())
}

// read reads the entry just ahead of the one created at rev: from the
// member if it has applied gone, else through the leader.
func (f etcdFloor) read(ctx context.Context, pfx string, rev, gone int64) (*clientv3.GetResponse, error) {
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))
	if gone > 0 {
		r, err := f.cli.Get(ctx, pfx, append(opts, clientv3.WithSerializable())...)
		if err == nil && r.Header.Revision >= gone {
			return r, nil
		}
	}
	return f.cli.Get(ctx, pfx, opts...)
}

// TestEtcdFloorExclusive checks the control itself: 8 floor workers on
// one key never hold it two at a time, and hand it on (a floor that let
// two hold, or that stalled, would measure something else).
func TestEtcdFloorExclusive(t *testing.T) {
	e := startEtcd(t)
	cs := etcdFloors(t, e, 8)
	var inside, overlaps, n atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				release, err := c.acquire(ctx, "floor-exclusive")
				if err != nil {
					continue // the run ended during a wait
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				time.Sleep(200 * time.Microsecond)
				inside.Add(-1)
				n.Add(1)
				if err := release(context.Background()); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() > 0 || n.Load() < 16 {
		t.Fatalf("%d acquisitions, %d while another held the key; want >= 16 and none", n.Load(), overlaps.Load())
	}
}
