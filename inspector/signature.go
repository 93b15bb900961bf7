package inspector

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// SignatureHeader is the header the service signs deliveries with.
const SignatureHeader = "X-Service-Signature"

// Sign returns the signature the service would send for body under secret:
// lowercase hex HMAC-SHA256 of the raw body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify judges a delivery's signature header against every configured
// secret. received is the header value and present says whether the header
// was there at all. Several secrets are allowed so a rotation can be
// watched: the first that matches is reported.
func Verify(received string, present bool, body []byte, secrets [][]byte) SignatureResult {
	r := SignatureResult{SecretIndex: -1, Received: strings.TrimSpace(received)}
	// Each digest is computed once, for Expected and for the comparison:
	// on a 1 MiB body one HMAC is ~0.7 ms.
	sums := make([][]byte, len(secrets))
	for i, s := range secrets {
		m := hmac.New(sha256.New, s)
		m.Write(body)
		sums[i] = m.Sum(nil)
		r.Expected = append(r.Expected, hex.EncodeToString(sums[i]))
	}
	switch {
	case !present:
		r.Status = SignatureMissing
		r.Reason = "the delivery has no " + SignatureHeader + " header"
		return r
	case len(secrets) == 0:
		r.Status = SignatureUnverified
		r.Reason = "no webhook secret is configured, so the signature cannot be checked"
		return r
	}
	// Some senders prefix the algorithm; the service does not. Accept it
	// but say so (Note), since a consumer comparing strings would fail.
	got := r.Received[len(algorithmPrefix(r.Received)):]
	raw, err := hex.DecodeString(got)
	if err != nil || len(raw) != sha256.Size {
		r.Status = SignatureInvalid
		switch {
		case got == "":
			r.Reason = "the " + SignatureHeader + " header is empty"
		case err != nil:
			r.Reason = fmt.Sprintf("the signature is not hex (%d characters); the service sends 64 lowercase hex characters", len(got))
		default:
			r.Reason = fmt.Sprintf("the signature is %d bytes; an HMAC-SHA256 is 32 bytes (64 hex characters)", len(raw))
		}
		return r
	}
	r.UpperCase = got != strings.ToLower(got)
	for i, sum := range sums {
		if hmac.Equal(sum, raw) {
			r.Status = SignatureValid
			r.SecretIndex = i
			switch {
			case r.UpperCase:
				r.Reason = fmt.Sprintf("matches secret #%d, but in upper-case hex: the service sends lower case, so a consumer comparing strings would reject it", i+1)
			case got != r.Received:
				r.Reason = fmt.Sprintf("matches secret #%d after removing a %q prefix the service does not send", i+1, r.Received[:len(r.Received)-len(got)])
			default:
				r.Reason = fmt.Sprintf("matches secret #%d", i+1)
			}
			return r
		}
	}
	r.Status = SignatureInvalid
	if len(secrets) == 1 {
		r.Reason = "the digest does not match the configured secret: the body was changed after signing, or the secret is not the one entered in the service's webhook settings"
	} else {
		r.Reason = fmt.Sprintf("the digest matches none of the %d configured secrets: the body was changed after signing, or the webhook uses another secret", len(secrets))
	}
	return r
}

// algorithmPrefix returns the "sha256=" (any case) that some senders put
// before the digest, "" when received has none.
func algorithmPrefix(received string) string {
	if i := strings.Index(received, "="); i > 0 && strings.EqualFold(received[:i], "sha256") {
		return received[:i+1]
	}
	return ""
}

// Note says how a valid signature departs from the form the service sends
// (an algorithm prefix, upper-case hex), "" when it does not: Hookscope
// accepts it, but a consumer comparing strings would reject it.
func (r SignatureResult) Note() string {
	if r.Status != SignatureValid {
		return ""
	}
	var what []string
	if p := algorithmPrefix(r.Received); p != "" {
		what = append(what, fmt.Sprintf("sent with a %q prefix", p))
	}
	if r.UpperCase {
		what = append(what, "sent in upper-case hex")
	}
	if len(what) == 0 {
		return ""
	}
	return strings.Join(what, " and ") + ": the service sends 64 lowercase hex characters and nothing else, so a consumer comparing strings would reject it"
}
