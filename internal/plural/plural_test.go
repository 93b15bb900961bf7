package plural

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Count(0, "delivery", "deliveries"), "0 deliveries"},
		{Count(1, "delivery", "deliveries"), "1 delivery"},
		{Count(2, "delivery", "deliveries"), "2 deliveries"},
		{S(1, "message"), "1 message"},
		{S(3, "message"), "3 messages"},
		{Count(5002, "delivery", "deliveries"), "5,002 deliveries"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
