// Package relay is Hookscope's NATS JetStream link for teams: an always-on
// relay receives the service's deliveries and appends each receipt to a
// JetStream stream before it answers; every laptop reads the stream through
// its own durable consumer and commits each delivery to its own store
// before it acknowledges it, so a laptop that sleeps or crashes resumes
// where it stopped, in the relay's order.
//
// The relay side is Server (an embedded NATS server with JetStream file
// storage, or a connection to an existing NATS deployment), its Sink
// (what the receiver stores a delivery with, returning after JetStream's
// publish ack) and its NATSHandler (the WebSocket endpoint laptops reach
// under /nats on the receiver's port). The laptop side is Source, which
// commits through the small Store interface defined here, and Pull, the
// one-shot read behind `hookscope pull`. Access is never open: each
// laptop holds a credential (Invite) scoped to reading the stream and to
// its own consumer, and Revoke ends it on a running relay.
//
// The package never imports Fyne.
package relay
