package relay

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/hookscope/hookscope/inspector"
)

// startCluster starts a three-node NATS cluster with JetStream on
// loopback, in this process, with users' NKeys.
func startCluster(t *testing.T, users []*server.NkeyUser) []*server.Server {
	t.Helper()
	var nodes []*server.Server
	// Route ports are chosen first so each node can list the others.
	var routes []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, "nats://"+ln.Addr().String())
		ln.Close()
	}
	for i := range 3 {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			Nkeys:      users,
			JetStream:  true,
			StoreDir:   filepath.Join(t.TempDir(), "js"),
			MaxPayload: MaxPayload,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "hookscope-test", Host: "127.0.0.1", Port: portOf(t, routes[i])},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		}
		ns, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		t.Cleanup(ns.Shutdown)
		nodes = append(nodes, ns)
	}
	for i, ns := range nodes {
		if !ns.ReadyForConnections(30 * time.Second) {
			t.Fatalf("node %d did not start", i+1)
		}
	}
	waitFor(t, 30*time.Second, "the cluster forms a JetStream meta group", func() bool {
		for _, n := range nodes {
			if n.NumRoutes() < 2 || !n.JetStreamIsCurrent() {
				return false
			}
		}
		return nodes[0].JetStreamIsLeader() || nodes[1].JetStreamIsLeader() || nodes[2].JetStreamIsLeader()
	})
	return nodes
}

func portOf(t *testing.T, u string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(u, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func newKey(t *testing.T) (nkeys.KeyPair, string, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	return kp, pub, string(seed)
}

func TestClusterNodeStopsUnderLoad(t *testing.T) {
	_, relayPub, relaySeed := newKey(t)
	_, lapPub, lapSeed := newKey(t)
	nodes := startCluster(t, []*server.NkeyUser{
		{Nkey: relayPub},
		{Nkey: lapPub, Permissions: Permissions(DefaultStream, "erin")},
	})
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.ClientURL())
	}
	credsFile := filepath.Join(t.TempDir(), "relay.nk")
	if err := os.WriteFile(credsFile, []byte(relaySeed), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, Options{NATSURL: strings.Join(urls, ","), NATSCreds: credsFile, Replicas: 3}, inspector.ServerOptions{})
	info, err := r.js.Stream(context.Background(), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().Config.Replicas; got != 3 {
		t.Fatalf("stream replicas %d, want 3", got)
	}

	erin := ConnString{URL: strings.Join(urls, ","), Name: "erin", Seed: lapSeed, Stream: DefaultStream, Since: time.Now().Add(-time.Minute)}
	st := newMemStore()
	runSource(t, erin, st)

	// The node to stop is the laptop's and the stream's leader both: the
	// stream elects a new leader while the laptop reconnects elsewhere.
	var laptopNode *server.Server
	waitFor(t, 20*time.Second, "the laptop connects", func() bool {
		for _, nd := range nodes {
			cz, err := nd.Connz(&server.ConnzOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cz.Conns {
				if c.Name == "hookscope laptop erin" {
					laptopNode = nd
				}
			}
		}
		return laptopNode != nil
	})
	leaderIs := func(name string) bool {
		si, err := r.js.Stream(context.Background(), DefaultStream)
		return err == nil && si.CachedInfo().Cluster != nil && si.CachedInfo().Cluster.Leader == name
	}
	if !leaderIs(laptopNode.Name()) {
		req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, laptopNode.Name())
		if _, err := r.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+DefaultStream, []byte(req), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the stream's leader moves to the laptop's node", func() bool { return leaderIs(laptopNode.Name()) })
	}

	// Publish under load; stop that node part-way.
	const n = 600
	var mu sync.Mutex
	acked := map[int]bool{}
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if err := r.Sink().Record(context.Background(), delivery(i)); err == nil {
				mu.Lock()
				acked[i] = true
				mu.Unlock()
			}
		}
	}()
	waitFor(t, 30*time.Second, "a third of the load acknowledged", func() bool { return ackedCount() >= n/3 })
	laptopNode.Shutdown()
	<-done
	if got := ackedCount(); got < n/2 {
		t.Fatalf("only %d of %d acknowledged after the node stopped", got, n)
	}
	// Every acknowledged delivery reaches the laptop, in order, once (a
	// publish that failed may still have been stored: it may arrive too).
	index := map[string]int{}
	for i := range n {
		index[string(delivery(i).Body)] = i
	}
	waitFor(t, 60*time.Second, "the laptop has every acknowledged delivery", func() bool {
		have := map[int]bool{}
		for _, r := range st.snapshot() {
			have[index[string(r.Delivery.Body)]] = true
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range acked {
			if !have[i] {
				return false
			}
		}
		return true
	})
	prev := -1
	for _, r := range st.snapshot() {
		i, ok := index[string(r.Delivery.Body)]
		if !ok || i <= prev {
			t.Fatalf("delivery %d (known: %v) after %d: out of order or twice", i, ok, prev)
		}
		prev = i
	}
}
