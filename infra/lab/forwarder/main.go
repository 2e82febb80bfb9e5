// SPDX-License-Identifier: Apache-2.0

// dcdrill-forwarder delays the lab's inter-DC traffic in userspace, for kernels without sch_netem.
//
// The router namespace routes every packet that crosses DCs into one TUN device (infra/lab/shaper.py
// sets up the policy routing). This program reads each packet, looks up its DC pair from the
// source and destination addresses (prefix.<dc>.x), drops it with the pair's loss probability,
// holds it for the pair's one-way delay (plus jitter, and the time a bandwidth cap needs), and
// writes it back into the same device, from where the kernel routes it on to its DC.
//
// The links file is JSON (see Links) and is re-read on SIGHUP, so a fault changes a link at run
// time without losing a packet in flight. Packets of one pair leave in the order they came:
// jitter never reorders (TCP would read reordering as loss).
//
// With --supervise the process restarts its worker whenever it dies, so the lab never runs
// without it; the TUN device is persistent, so while no worker reads it packets are dropped,
// never routed around the delay.
package main

import (
	"container/heap"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Link is one direction of a DC pair. Zero values mean no delay, no loss, no cap.
type Link struct {
	From      int     `json:"from"` // DC index: the third octet of its subnet
	To        int     `json:"to"`
	LatencyMs float64 `json:"latency_ms"`
	JitterMs  float64 `json:"jitter_ms"`
	LossPct   float64 `json:"loss_pct"`
	RateMbit  float64 `json:"rate_mbit"` // 0 = no cap
}

// Links is the whole file: a default for every pair, then per-direction overrides.
type Links struct {
	Default Link   `json:"default"`
	Links   []Link `json:"links"`
}

type pairState struct {
	link     Link
	lastOut  time.Time // release time of the pair's previous packet: keeps order
	busyTill time.Time // when the capped link is free again
}

// releaseSlack: how early a packet may leave to share a wake-up with the one before it.
const releaseSlack = 100 * time.Microsecond

// bufs recycles packet buffers: at tens of thousands of packets a second, garbage is CPU.
var bufs = sync.Pool{New: func() any { return make([]byte, 2048) }}

type packet struct {
	release time.Time
	seq     uint64
	data    []byte
}

type queue []*packet

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].release.Equal(q[j].release) {
		return q[i].seq < q[j].seq
	}
	return q[i].release.Before(q[j].release)
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*packet)) }
func (q *queue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}

type forwarder struct {
	mu      sync.Mutex
	q       queue
	seq     uint64
	limit   int
	prefix  [2]byte
	deflt   Link
	pairs   map[[2]byte]*pairState
	rng     *rand.Rand
	dropped uint64
	passed  uint64
}

func loadLinks(path string) (Links, []byte, error) {
	var l Links
	raw, err := os.ReadFile(path)
	if err != nil {
		return l, nil, err
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return l, nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, raw, nil
}

// confirm tells the launcher which links are in force: the file's bytes, written beside it.
func confirm(path string, raw []byte) {
	tmp := path + ".applied.tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err == nil {
		os.Rename(tmp, path+".applied")
	}
}

func (f *forwarder) apply(l Links) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deflt = l.Default
	old := f.pairs
	f.pairs = map[[2]byte]*pairState{}
	for _, k := range l.Links {
		key := [2]byte{byte(k.From), byte(k.To)}
		st := &pairState{link: k}
		if o, ok := old[key]; ok { // a change keeps the order of what is already queued
			st.lastOut, st.busyTill = o.lastOut, o.busyTill
		}
		f.pairs[key] = st
	}
}

func (f *forwarder) pair(src, dst byte) *pairState {
	key := [2]byte{src, dst}
	st, ok := f.pairs[key]
	if !ok {
		st = &pairState{link: f.deflt}
		st.link.From, st.link.To = int(src), int(dst)
		f.pairs[key] = st
	}
	return st
}

// admit schedules one packet, or drops it (loss, or a full queue). It returns true when the
// packet is due now and nothing waits before it: the caller writes it at once.
func (f *forwarder) admit(data []byte, now time.Time) bool {
	if len(data) < 20 || data[0]>>4 != 4 {
		return false // only IPv4 is routed into the lab
	}
	src, dst := data[12:16], data[16:20]
	f.mu.Lock()
	defer f.mu.Unlock()
	var l Link
	var st *pairState
	if src[0] == f.prefix[0] && src[1] == f.prefix[1] && dst[0] == f.prefix[0] && dst[1] == f.prefix[1] {
		st = f.pair(src[2], dst[2])
		l = st.link
	}
	if l.LossPct > 0 && f.rng.Float64()*100 < l.LossPct || len(f.q) >= f.limit {
		f.dropped++
		return false
	}
	delay := time.Duration(l.LatencyMs * float64(time.Millisecond))
	if l.JitterMs > 0 {
		delay += time.Duration((f.rng.Float64()*2 - 1) * l.JitterMs * float64(time.Millisecond))
		if delay < 0 {
			delay = 0
		}
	}
	release := now.Add(delay)
	if st != nil {
		if l.RateMbit > 0 {
			start := now
			if st.busyTill.After(start) {
				start = st.busyTill
			}
			st.busyTill = start.Add(time.Duration(float64(len(data)*8) / (l.RateMbit * 1e6) * float64(time.Second)))
			if r := st.busyTill.Add(delay); r.After(release) {
				release = r
			}
		}
		if st.lastOut.After(release) {
			release = st.lastOut
		}
		st.lastOut = release
	}
	if len(f.q) == 0 && !release.After(now) {
		f.passed++
		return true
	}
	f.seq++
	heap.Push(&f.q, &packet{release: release, seq: f.seq, data: data})
	return false
}

// releaseDue writes every packet due by now (plus the slack) and returns how long until the
// next one is due (-1: none queued).
func (f *forwarder) releaseDue(fd int) time.Duration {
	f.mu.Lock()
	now := time.Now()
	horizon := now.Add(releaseSlack)
	var due []*packet
	for len(f.q) > 0 && !f.q[0].release.After(horizon) {
		due = append(due, heap.Pop(&f.q).(*packet))
	}
	wait := time.Duration(-1)
	if len(f.q) > 0 {
		wait = f.q[0].release.Sub(now)
	}
	f.passed += uint64(len(due))
	f.mu.Unlock()
	for _, p := range due {
		writePacket(fd, p.data)
		bufs.Put(p.data[:cap(p.data)])
	}
	return wait
}

func writePacket(fd int, data []byte) {
	if _, err := syscall.Write(fd, data); err != nil && err != syscall.EINVAL && err != syscall.EAGAIN {
		log.Printf("write: %v", err)
	}
}

// run is the whole data path, on one OS thread: read every packet waiting, write every packet
// due, then sleep in ppoll until a packet arrives or the next one is due. On a virtual machine
// every thread hand-off and syscall is dear; this loop makes about two syscalls a packet.
func (f *forwarder) run(fd int) {
	runtime.LockOSThread()
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: 0x1} // POLLIN
	for {
		for {
			buf := bufs.Get().([]byte)
			n, err := syscall.Read(fd, buf)
			if err == syscall.EAGAIN || err == syscall.EINTR {
				bufs.Put(buf)
				break
			}
			if err != nil {
				log.Fatalf("read: %v", err)
			}
			if f.admit(buf[:n], time.Now()) {
				writePacket(fd, buf[:n])
				bufs.Put(buf)
			}
		}
		wait := f.releaseDue(fd)
		var ts *syscall.Timespec
		if wait >= 0 {
			t := syscall.NsecToTimespec(int64(wait))
			ts = &t
		}
		_, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
		if e != 0 && e != syscall.EINTR {
			log.Fatalf("ppoll: %v", e)
		}
	}
}

func openTun(name string) (int, error) {
	fd, err := syscall.Open("/dev/net/tun", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var req [40]byte // struct ifreq: name[16], flags (short)
	copy(req[:16], name)
	const iffTun, iffNoPi = 0x0001, 0x1000
	*(*uint16)(unsafe.Pointer(&req[16])) = iffTun | iffNoPi
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(0x400454ca), uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		syscall.Close(fd)
		return -1, fmt.Errorf("TUNSETIFF %s: %v", name, e)
	}
	// Non-blocking: the loop reads until EAGAIN, then waits in ppoll.
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func parsePrefix(s string) ([2]byte, error) {
	var a, b int
	if _, err := fmt.Sscanf(s, "%d.%d", &a, &b); err != nil || a < 0 || a > 255 || b < 0 || b > 255 {
		return [2]byte{}, fmt.Errorf("--prefix %q: want two octets like 10.77", s)
	}
	return [2]byte{byte(a), byte(b)}, nil
}

// supervise runs the worker (this same binary without --supervise) and restarts it when it dies.
func supervise() {
	args := []string{}
	for _, a := range os.Args[1:] {
		if a != "--supervise" && a != "-supervise" {
			args = append(args, a)
		}
	}
	var child *os.Process
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			if child != nil {
				child.Signal(s)
			}
			if s != syscall.SIGHUP {
				os.Exit(0)
			}
		}
	}()
	for restarts := 0; ; restarts++ {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			log.Fatalf("start worker: %v", err)
		}
		child = cmd.Process
		err := cmd.Wait()
		log.Printf("worker exited (%v); restart %d", err, restarts+1)
		time.Sleep(200 * time.Millisecond)
	}
}

func main() {
	dev := flag.String("dev", "fwd0", "the persistent TUN device the router sends inter-DC traffic to")
	linksPath := flag.String("links", "", "the links file (JSON); re-read on SIGHUP")
	prefixArg := flag.String("prefix", "10.77", "the lab's first two octets; a DC's index is the third")
	limit := flag.Int("limit", 20000, "packets held at most; beyond it, a packet is dropped (netem's limit)")
	flag.Bool("supervise", false, "restart the worker whenever it dies")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	for _, a := range os.Args[1:] {
		if a == "--supervise" || a == "-supervise" {
			supervise()
		}
	}
	prefix, err := parsePrefix(*prefixArg)
	if err != nil {
		log.Fatal(err)
	}
	links, raw, err := loadLinks(*linksPath)
	if err != nil {
		log.Fatal(err)
	}
	tun, err := openTun(*dev)
	if err != nil {
		log.Fatal(err)
	}
	f := &forwarder{limit: *limit, prefix: prefix,
		pairs: map[[2]byte]*pairState{}, rng: rand.New(rand.NewSource(time.Now().UnixNano()))}
	f.apply(links)
	confirm(*linksPath, raw)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			if l, raw, err := loadLinks(*linksPath); err != nil {
				log.Printf("reload: %v (keeping the previous links)", err)
			} else {
				f.apply(l)
				confirm(*linksPath, raw)
				log.Printf("reloaded %s", *linksPath)
			}
		}
	}()
	log.Printf("forwarding on %s", *dev)
	f.run(tun)
}
