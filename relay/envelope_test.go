package relay

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 24, 14, 2, 3, 123456789, time.UTC)
	tests := []struct {
		name string
		d    *inspector.Delivery
	}{
		{"plain", &inspector.Delivery{
			ReceivedAt: at, Method: "POST", Path: "/webhooks", RemoteAddr: "203.0.113.9:5123", Status: 200,
			Headers: []inspector.Header{{Name: "host", Value: "relay.example"}, {Name: "X-Signature", Value: "t=1,v1=ab"}, {Name: "x-signature", Value: "second copy"}},
			Body:    []byte(`{"hook":{"uuid":"h1"},"events":[]}`), BodyLength: 35,
		}},
		{"obs-text header bytes and a binary body", &inspector.Delivery{
			ReceivedAt: at, Method: "POST", Path: "/", Query: "a=1&b=%zz", Status: 200,
			Headers: []inspector.Header{{Name: "X-Latin1", Value: "caf\xe9 \xff"}, {Name: "Empty", Value: ""}},
			Body:    []byte{0, 1, 2, 0xff, '\r', '\n'}, BodyLength: 6,
		}},
		{"truncated, read error, close answer, reconstructed headers", &inspector.Delivery{
			ReceivedAt: at, Method: "POST", Path: "/big", Status: 413, Truncated: true, BodyLength: 11 << 20,
			ReadError: "unexpected EOF", Answer: "close", HeadersReconstructed: true,
			Body: bytes.Repeat([]byte("x"), 1000),
		}},
		{"rejected GET without body or headers", &inspector.Delivery{
			ReceivedAt: at, Method: "GET", Path: "/", Status: 405, Rejected: true, Body: []byte{},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, receipt, err := decodeEnvelope(encodeEnvelope(tt.d, "R1"))
			if err != nil {
				t.Fatal(err)
			}
			if receipt != "R1" {
				t.Errorf("receipt %q, want R1", receipt)
			}
			want := *tt.d
			want.Source = DeliverySource
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, &want)
			}
		})
	}
}

func TestDecodeEnvelopeRefusesDamage(t *testing.T) {
	good := encodeEnvelope(&inspector.Delivery{Method: "POST", Path: "/p", Headers: []inspector.Header{{Name: "A", Value: "b"}}, Body: []byte("body")}, "R")
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"another magic", append([]byte("HSR2"), good[4:]...)},
		{"cut in the fixed part", good[:10]},
		{"cut in a field", good[:fixedLen+3]},
		{"a header count beyond the bytes", func() []byte {
			b := encodeEnvelope(&inspector.Delivery{}, "")
			// The header count is the last byte before the (empty) body.
			b[len(b)-1] = 100
			return b
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := decodeEnvelope(tt.data); !errors.Is(err, errEnvelope) {
				t.Fatalf("err = %v, want errEnvelope", err)
			}
		})
	}
}
