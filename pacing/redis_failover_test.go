package pacing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/internal/redistest"
	"github.com/robotsgate/robotsgate/redisconn"
)

// A reservation is used only once a replica that could replace the
// primary has it. The replica is frozen and its link cut on the primary's
// side, so that the primary's next write reaches no replica; a
// reservation then is refused (the store is unavailable), not granted.
// The primary is killed and Sentinel promotes the replica: the next
// reservation on the promoted replica starts no earlier than an interval
// after every slot the store granted before the failover. Without WAIT
// (ReplicaAcks 0) the second reservation would be granted, lost with the
// primary, and its slot handed out again.
func TestRedisSentinelFailoverKeepsEveryGrantedSlot(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	sentinels := redistest.StartSentinels(t, primary, 3, redistest.SentinelOptions{Master: "pacing"})
	var addrs []string
	for _, s := range sentinels {
		addrs = append(addrs, s.Addr)
	}
	conn, err := redisconn.Open(redisconn.Options{Sentinel: &redisconn.Sentinel{Master: "pacing", Addrs: addrs}, ReplicaAcks: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	store, err := NewRedis(RedisOptions{Conn: conn})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const iv = 10 * time.Second
	var granted []time.Time // slots, on this process' clock
	reserve := func() (Reservation, error) {
		r, err := store.Reserve(ctx, "https://a.example:443 *", iv, time.Minute)
		if err == nil && r.Granted {
			granted = append(granted, time.Now().Add(r.Wait))
		}
		return r, err
	}
	// The watcher has read that the replica could be promoted: a write
	// waits for it.
	deadline := time.Now().Add(10 * time.Second)
	for _, n, _ := conn.WriteNode(ctx, "k"); n != 1; _, n, _ = conn.WriteNode(ctx, "k") {
		if time.Now().After(deadline) {
			t.Fatal("the replica is never counted as promotable")
		}
		time.Sleep(20 * time.Millisecond) // polling the watcher's state
	}
	if r, err := reserve(); err != nil || !r.Granted {
		t.Fatalf("first reservation: %+v %v", r, err)
	}

	replica.Freeze()
	pc := primary.Client()
	if err := pc.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica: %v", err)
	}
	pc.Close()
	start := time.Now()
	r, err := reserve()
	took := time.Since(start)
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Errorf("a reservation no replica acknowledged: %+v, %v; want an *UnavailableError", r, err)
	}
	// docs/fleet.md: a replica has 250 ms to acknowledge.
	if took < 250*time.Millisecond || took > time.Second {
		t.Errorf("the reservation no replica acknowledged was refused after %v, want after the 250 ms a replica has", took)
	}
	watch := sentinels[0].WatchSwitch()
	primary.Kill()
	replica.Thaw()
	if to := watch.Wait(t, 60*time.Second); to != replica.Addr {
		t.Fatalf("+switch-master to %s, want %s", to, replica.Addr)
	}
	var after Reservation
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) { // until the client is on the new primary
		if after, err = store.Reserve(ctx, "https://a.example:443 *", iv, time.Minute); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reservation on the promoted replica within 30 s: %v", err)
		}
	}
	slot := time.Now().Add(after.Wait)
	for i, g := range granted {
		if gap := slot.Sub(g); gap < iv-elapsedSlack {
			t.Errorf("the slot after the failover is %v after granted slot %d, less than the interval %v", gap.Round(time.Millisecond), i, iv)
		}
	}
}

// The time a reservation waits for its replica is not added to the hold:
// the wait is counted from Redis' clock after WAIT. The replica is frozen
// for 300 ms while a reservation 1 s ahead is made: it is acknowledged
// when the replica thaws, and the hold is what is left of the second,
// not a whole second more.
func TestRedisWaitForTheReplicaIsNotAddedToTheHold(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	sentinels := redistest.StartSentinels(t, primary, 1, redistest.SentinelOptions{Master: "ack", DownAfter: 10 * time.Second})
	conn, err := redisconn.Open(redisconn.Options{Sentinel: &redisconn.Sentinel{Master: "ack", Addrs: []string{sentinels[0].Addr}},
		ReplicaAcks: 1, AckTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	store, err := NewRedis(RedisOptions{Conn: conn, OpTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := store.Reserve(ctx, "https://b.example:443 *", time.Second, time.Minute); err != nil || !r.Granted {
		t.Fatalf("first reservation: %+v %v", r, err)
	}
	replica.Freeze()
	thawed := time.AfterFunc(300*time.Millisecond, replica.Thaw)
	defer thawed.Stop()
	start := time.Now()
	r, err := store.Reserve(ctx, "https://b.example:443 *", time.Second, time.Minute)
	took := time.Since(start)
	if err != nil || !r.Granted {
		t.Fatalf("second reservation: %+v %v", r, err)
	}
	if took < 300*time.Millisecond {
		t.Fatalf("the second reservation took %v: it did not wait for the frozen replica", took)
	}
	if r.Wait > time.Second-took+elapsedSlack/10 {
		t.Errorf("hold %v after %v waiting for the replica: the slot is 1 s after the first, so at most %v are left",
			r.Wait.Round(time.Millisecond), took.Round(time.Millisecond), (time.Second - took).Round(time.Millisecond))
	}
}
