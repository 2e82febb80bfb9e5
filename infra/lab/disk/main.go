// SPDX-License-Identifier: Apache-2.0

// dcdrill-disk: a lab host's data disk that can lose power.
//
// It mounts a folder of the machine (the backing folder) at the host's data root through FUSE,
// passing every operation through, and remembers what a power cut would take: for each file, its
// size when its data was last durable and what each later write overwrote below that size. Data
// is durable once fsync'd, or once the kernel would have written it back on its own (Linux's
// dirty_expire_centisecs, 30 s by default; -writeback-after). A shrink (truncate) is metadata:
// it is durable once the filesystem's journal commits it (ext4's commit interval, 5 s by default;
// -journal-commit), as on the AWS hosts' ext4 data volume. A cut drops every later write,
// rolls each file back to its durable content and drops the kernel's cached pages; power comes
// back when the host restarts. Like LazyFS, it loses file data only: creating, renaming and
// deleting files are passed through at once.
//
//	dcdrill-disk -backing DIR -mount DIR -control SOCKET [-writeback-after 30s] [-journal-commit 5s]
//
// The control socket takes one command per connection and answers one JSON line:
//
//	cut    the power goes: {"files": n, "bytes_lost": n}
//	power  the power comes back
//	stats  {"powered": bool, "dirty_files": n, "dirty_bytes": n}
//
// SIGTERM or SIGINT unmounts and exits.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// preImage is what a write overwrote of a file's durable content.
type preImage struct {
	off  int64
	data []byte
}

// shrink is a truncate not yet committed by the journal.
type shrink struct {
	size int64
	at   time.Time
}

// dirty is one file's writes since its data was last durable.
type dirty struct {
	fd      int   // a read-write descriptor of the backing file, the daemon's own
	durable int64 // the file's size when its data was last durable
	since   time.Time
	undo    []preImage
	shrinks []shrink
	written int64
}

// commitShrink makes a journaled truncate durable: the durable file ends at its size, so what
// the undo would put back past it no longer exists on the disk either.
func (f *dirty) commitShrink(size int64) {
	if size >= f.durable {
		return
	}
	f.durable = size
	kept := f.undo[:0]
	for _, p := range f.undo {
		if p.off < size {
			p.data = p.data[:min(int64(len(p.data)), size-p.off)]
			kept = append(kept, p)
		}
	}
	f.undo = kept
}

type disk struct {
	mu           sync.Mutex
	powered      bool
	files        map[uint64]*dirty // by backing inode number
	inodes       map[*fs.Inode]struct{}
	writebackFor time.Duration
	commitEvery  time.Duration
}

func newDisk(writebackAfter, journalCommit time.Duration) *disk {
	return &disk{powered: true, files: map[uint64]*dirty{}, inodes: map[*fs.Inode]struct{}{},
		writebackFor: writebackAfter, commitEvery: journalCommit}
}

func fstat(fd int) (syscall.Stat_t, error) {
	var st syscall.Stat_t
	err := syscall.Fstat(fd, &st)
	return st, err
}

// track records, before a change of [off, end) of the file open as fd, what the change takes
// from its durable content. Called with d.mu held.
func (d *disk) track(fd int, inode *fs.Inode, off, end int64) syscall.Errno {
	if !d.powered {
		return syscall.EIO
	}
	st, err := fstat(fd)
	if err != nil {
		return fs.ToErrno(err)
	}
	f := d.files[st.Ino]
	if f == nil {
		// A descriptor of its own, read-write: the writer's may be write-only (ZooKeeper's
		// FileOutputStream), and the pre-images are read and put back through this one.
		rw, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d", fd), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fs.ToErrno(err)
		}
		f = &dirty{fd: rw, durable: st.Size, since: time.Now()}
		d.files[st.Ino] = f
	}
	d.inodes[inode] = struct{}{}
	if off < f.durable {
		n := min(end, f.durable) - off
		buf := make([]byte, n)
		got, err := syscall.Pread(f.fd, buf, off)
		if err != nil {
			return fs.ToErrno(err)
		}
		f.undo = append(f.undo, preImage{off, buf[:got]})
	}
	f.written += end - off
	return 0
}

// durable forgets a file's writes: fsync'd, or written back by the kernel's own clock.
func (d *disk) durable(ino uint64) {
	if f := d.files[ino]; f != nil {
		syscall.Close(f.fd)
		delete(d.files, ino)
	}
}

func (d *disk) writeback() {
	for range time.Tick(time.Second) {
		d.mu.Lock()
		for ino, f := range d.files {
			if !d.powered {
				break
			}
			if time.Since(f.since) >= d.writebackFor {
				d.durable(ino)
				continue
			}
			for len(f.shrinks) > 0 && time.Since(f.shrinks[0].at) >= d.commitEvery {
				f.commitShrink(f.shrinks[0].size)
				f.shrinks = f.shrinks[1:]
			}
		}
		d.mu.Unlock()
	}
}

type cutResult struct {
	Files     int   `json:"files"`
	BytesLost int64 `json:"bytes_lost"`
}

// cut: no write lands from now on; each file goes back to its durable content, and the kernel
// drops its cached pages, dirty ones included (their write-back is taken and dropped), so that
// what the host reads after power comes back is what the disk kept.
func (d *disk) cut() cutResult {
	d.mu.Lock()
	d.powered = false
	inodes := make([]*fs.Inode, 0, len(d.inodes))
	for n := range d.inodes {
		inodes = append(inodes, n)
	}
	d.mu.Unlock()
	for _, n := range inodes {
		n.NotifyContent(0, 0)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out cutResult
	for ino, f := range d.files {
		st, _ := fstat(f.fd)
		if st.Size > f.durable {
			out.BytesLost += st.Size - f.durable
		}
		for i := len(f.undo) - 1; i >= 0; i-- {
			syscall.Pwrite(f.fd, f.undo[i].data, f.undo[i].off)
			out.BytesLost += int64(len(f.undo[i].data))
		}
		syscall.Ftruncate(f.fd, f.durable)
		out.Files++
		d.durable(ino)
	}
	for _, n := range inodes {
		n.NotifyContent(0, 0)
	}
	d.inodes = map[*fs.Inode]struct{}{}
	return out
}

// node is a loopback node whose files are tracked.
type node struct {
	fs.LoopbackNode
	disk *disk
}

func (n *node) wrap(fh fs.FileHandle) fs.FileHandle {
	return &file{lf: fh.(*fs.LoopbackFile), disk: n.disk, inode: n.EmbeddedInode()}
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return n.wrap(fh), fuseFlags, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return inode, &file{lf: fh.(*fs.LoopbackFile), disk: n.disk, inode: inode}, fuseFlags, 0
}

// Setattr without an open file (truncate(2) by path): tracked through a descriptor of its own.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok && fh == nil {
		fd, err := syscall.Open(n.RootData.Path+"/"+n.Path(n.Root()), syscall.O_RDWR, 0)
		if err != nil {
			return fs.ToErrno(err)
		}
		defer syscall.Close(fd)
		if errno := (&file{disk: n.disk, inode: n.EmbeddedInode()}).truncating(fd, int64(size)); errno != 0 {
			return errno
		}
	}
	return n.LoopbackNode.Setattr(ctx, fh, in, out)
}

// CopyFileRange would write behind the tracking's back: ENOSYS makes the kernel read and write.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle,
	offOut uint64, len uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// file delegates to a loopback file but is not one: a FilePassthroughFder would let the kernel
// write to the backing file directly, past the tracking.
type file struct {
	lf    *fs.LoopbackFile
	disk  *disk
	inode *fs.Inode
}

func (f *file) withFd(fn func(fd int) syscall.Errno) syscall.Errno {
	fd, ok := f.lf.PassthroughFd() // the handle's own descriptor, valid until Release
	if !ok {
		return syscall.EBADF
	}
	return fn(fd)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f.disk.mu.Lock()
	defer f.disk.mu.Unlock()
	if !f.disk.powered {
		// The kernel writing back a dead process's mapped pages: they vanish, as with no power.
		// Taken, not refused: an error would stay on the file, and its next fsync would report
		// it to the service that opens it after the power comes back.
		return uint32(len(data)), 0
	}
	if errno := f.withFd(func(fd int) syscall.Errno { return f.disk.track(fd, f.inode, off, off+int64(len(data))) }); errno != 0 {
		return 0, errno
	}
	return f.lf.Write(ctx, data, off)
}

func (f *file) truncating(fd int, size int64) syscall.Errno {
	f.disk.mu.Lock()
	defer f.disk.mu.Unlock()
	st, err := fstat(fd)
	if err != nil {
		return fs.ToErrno(err)
	}
	if size < st.Size {
		if errno := f.disk.track(fd, f.inode, size, st.Size); errno != 0 {
			return errno
		}
		tracked := f.disk.files[st.Ino]
		tracked.shrinks = append(tracked.shrinks, shrink{size, time.Now()})
		return 0
	}
	return f.disk.track(fd, f.inode, st.Size, st.Size)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if errno := f.withFd(func(fd int) syscall.Errno { return f.truncating(fd, int64(size)) }); errno != 0 {
			return errno
		}
	}
	return f.lf.Setattr(ctx, in, out)
}

func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	// A size past the end: the file grows or keeps its size, and nothing durable is taken.
	if errno := f.withFd(func(fd int) syscall.Errno { return f.truncating(fd, 1<<62) }); errno != 0 {
		return errno
	}
	return f.lf.Allocate(ctx, off, size, mode)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	f.disk.mu.Lock()
	defer f.disk.mu.Unlock()
	if !f.disk.powered {
		return syscall.EIO
	}
	if errno := f.lf.Fsync(ctx, flags); errno != 0 {
		return errno
	}
	return f.withFd(func(fd int) syscall.Errno {
		st, err := fstat(fd)
		if err == nil {
			f.disk.durable(st.Ino)
		}
		return fs.ToErrno(err)
	})
}

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return f.lf.Read(ctx, buf, off)
}
func (f *file) Release(ctx context.Context) syscall.Errno { return f.lf.Release(ctx) }
func (f *file) Flush(ctx context.Context) syscall.Errno   { return f.lf.Flush(ctx) }
func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Getattr(ctx, out)
}
func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.lf.Lseek(ctx, off, whence)
}
func (f *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return f.lf.Getlk(ctx, owner, lk, flags, out)
}
func (f *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlk(ctx, owner, lk, flags)
}
func (f *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlkw(ctx, owner, lk, flags)
}

func serveControl(path string, d *disk) {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		log.Fatalf("control socket %s: %v", path, err)
	}
	os.Chmod(path, 0o600)
	for {
		conn, err := ln.Accept()
		if err != nil {
			continue
		}
		go func(c net.Conn) {
			defer c.Close()
			line, _ := bufio.NewReader(c).ReadString('\n')
			var answer any
			switch cmd := string(trim(line)); cmd {
			case "cut":
				answer = d.cut()
			case "power":
				d.mu.Lock()
				d.powered = true
				d.mu.Unlock()
				answer = map[string]bool{"powered": true}
			case "stats":
				d.mu.Lock()
				var bytes int64
				for _, f := range d.files {
					bytes += f.written
				}
				answer = map[string]any{"powered": d.powered, "dirty_files": len(d.files), "dirty_bytes": bytes}
				d.mu.Unlock()
			default:
				answer = map[string]string{"error": fmt.Sprintf("unknown command %q: cut, power or stats", cmd)}
			}
			json.NewEncoder(c).Encode(answer)
		}(conn)
	}
}

func trim(s string) []byte {
	b := []byte(s)
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

func main() {
	backing := flag.String("backing", "", "the folder that holds the disk's content")
	mount := flag.String("mount", "", "where the host sees it (its data root)")
	control := flag.String("control", "", "the control socket's path")
	writebackAfter := flag.Duration("writeback-after", 30*time.Second,
		"unsynced data older than this counts as written back by the kernel (Linux's dirty_expire_centisecs)")
	journalCommit := flag.Duration("journal-commit", 5*time.Second,
		"a truncate older than this is durable: the journal committed it (ext4's commit interval)")
	flag.Parse()
	if *backing == "" || *mount == "" || *control == "" {
		flag.Usage()
		os.Exit(2)
	}
	d := newDisk(*writebackAfter, *journalCommit)
	root := &fs.LoopbackRoot{Path: *backing}
	var st syscall.Stat_t
	if err := syscall.Stat(*backing, &st); err != nil {
		log.Fatalf("backing folder: %v", err)
	}
	root.Dev = uint64(st.Dev)
	root.NewNode = func(r *fs.LoopbackRoot, parent *fs.Inode, name string, st *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, disk: d}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	server, err := fs.Mount(*mount, root.RootNode, &fs.Options{MountOptions: fuse.MountOptions{
		// Each lab service runs as a uid of its own: the kernel checks permissions as a disk would.
		AllowOther: true, DirectMount: true, Options: []string{"default_permissions"},
		FsName: *backing, Name: "dcdrill-disk",
	}})
	if err != nil {
		log.Fatalf("mount %s: %v", *mount, err)
	}
	go d.writeback()
	go serveControl(*control, d)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		server.Unmount()
	}()
	server.Wait()
}
