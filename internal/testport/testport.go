// Package testport gives tests a loopback TCP port that is free now and
// that other tests' listeners will not be handed meanwhile.
//
// A test that must name a port before something listens on it (an OAuth
// redirect URI registered with the sandbox, then served by the login)
// cannot keep the listener it found the port with. A port found with
// 127.0.0.1:0 comes from the kernel's ephemeral range, from which every
// other test's 127.0.0.1:0 listener and outgoing connection is drawn too:
// with packages tested in parallel one of them took it in between now
// and then ("callback port … already in use"). Free picks from below that
// range instead, where nothing is handed out unasked.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// Free returns a loopback port outside the kernel's ephemeral range that
// nothing listens on now.
func Free(t testing.TB) int {
	t.Helper()
	lo := ephemeralLow()
	for range 200 {
		port := 10000 + rand.IntN(lo-10000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: try another
		}
		ln.Close()
		return port
	}
	t.Fatalf("testport: no free port found between 10000 and %d", lo)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	lo, hi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &lo, &hi)
	}
	return max(lo, 10001)
}
