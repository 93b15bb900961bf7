package bindaddr

import (
	"errors"
	"net"
	"testing"
)

func TestInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, busy := net.Listen("tcp", ln.Addr().String())
	_, bad := net.Listen("tcp", "127.0.0.1:99999")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{busy, true},
		{errors.New("listen tcp 127.0.0.1:80: bind: Only one usage of each socket address (protocol/network address/port) is normally permitted."), true},
		{bad, false},
		{nil, false},
	} {
		if got := InUse(tc.err); got != tc.want {
			t.Errorf("InUse(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
