// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import scala.Tuple2;

/**
 * Open-addressing map from a pair of longs (a producer hash and a seq, or a block of seqs) to its
 * state: a row of longs in one flat array, zeroed when created. Keys arrive in runs (a ledger
 * holds a producer's seqs mostly in order), so the last key is remembered and most rows skip
 * the probe.
 */
final class LongPairMap {
    final int width;          // longs per state, the two key longs first
    long[] slots;             // state rows, width longs each
    boolean[] used;
    int size;
    private int mask;
    private long last1 = Long.MIN_VALUE, last2 = Long.MIN_VALUE;
    private int lastAt = -1;
    // Recent keys, direct-mapped: where rows interleave a few keys (a log's partitions, row by
    // row), they are found here, in a few cache lines, instead of in the whole table.
    private static final int RECENT = 64;
    private final long[] recent1 = new long[RECENT], recent2 = new long[RECENT];
    private final int[] recentAt = new int[RECENT];

    LongPairMap(int width, int capacity) {
        this.width = width;
        int cap = Integer.highestOneBit(Math.max(16, capacity) * 2);
        slots = new long[cap * width];
        used = new boolean[cap];
        mask = cap - 1;
        Arrays.fill(recentAt, -1);
    }

    /** Offset of the key's state in `slots` (which may move: read `slots` after calling). */
    int at(long k1, long k2) {
        if (k1 == last1 && k2 == last2 && lastAt >= 0) return lastAt;
        int r = (int) (((k1 * 0x9E3779B97F4A7C15L + k2) * 0x9E3779B97F4A7C15L) >>> 58);  // 0..RECENT-1
        if (recentAt[r] >= 0 && recent1[r] == k1 && recent2[r] == k2) return remember(k1, k2, recentAt[r]);
        if (size * 2 >= used.length) grow();
        int i = mix(k1, k2) & mask;
        while (used[i]) {
            int o = i * width;
            if (slots[o] == k1 && slots[o + 1] == k2) return recall(r, k1, k2, o);
            i = (i + 1) & mask;
        }
        used[i] = true;
        size++;
        int o = i * width;
        slots[o] = k1;
        slots[o + 1] = k2;
        return recall(r, k1, k2, o);
    }

    private int recall(int r, long k1, long k2, int o) {
        recent1[r] = k1;
        recent2[r] = k2;
        recentAt[r] = o;
        return remember(k1, k2, o);
    }

    /** Offset of the key's state, or -1 when the key has none (nothing is added). */
    int find(long k1, long k2) {
        int i = mix(k1, k2) & mask;
        while (used[i]) {
            int o = i * width;
            if (slots[o] == k1 && slots[o + 1] == k2) return o;
            i = (i + 1) & mask;
        }
        return -1;
    }

    private int remember(long k1, long k2, int o) {
        last1 = k1;
        last2 = k2;
        lastAt = o;
        return o;
    }

    static int mix(long k1, long k2) {
        long h = k1 * 0x9E3779B97F4A7C15L + k2;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        return (int) (h ^ (h >>> 32));
    }

    /** Which reduce partition a key goes to: the same for every map task. */
    static int partition(long k1, long k2, int partitions) {
        return Math.floorMod(mix(k1, k2) * 31 + 7, partitions);
    }

    private void grow() {
        long[] oldSlots = slots;
        boolean[] oldUsed = used;
        slots = new long[oldSlots.length * 2];
        used = new boolean[oldUsed.length * 2];
        mask = used.length - 1;
        size = 0;
        lastAt = -1;
        Arrays.fill(recentAt, -1);  // offsets move
        for (int i = 0; i < oldUsed.length; i++) {
            if (!oldUsed[i]) continue;
            int from = i * width, to = at(oldSlots[from], oldSlots[from + 1]);
            System.arraycopy(oldSlots, from + 2, slots, to + 2, width - 2);
        }
    }

    /** The states, back to back (width longs each, keys first). */
    long[] states() {
        long[] out = new long[size * width];
        int n = 0;
        for (int i = 0; i < used.length; i++) {
            if (!used[i]) continue;
            System.arraycopy(slots, i * width, out, n, width);
            n += width;
        }
        return out;
    }

    /** The states as one block per reduce partition (the shuffle's unit), each after `header`
     *  longs; `header` is copied into partition 0's block only (task-wide totals). */
    List<Tuple2<Integer, long[]>> blocks(int partitions, long[] header) {
        int[] count = new int[partitions];
        for (int i = 0; i < used.length; i++)
            if (used[i]) count[partition(slots[i * width], slots[i * width + 1], partitions)]++;
        List<Tuple2<Integer, long[]>> out = new ArrayList<>(partitions);
        long[][] blocks = new long[partitions][];
        int[] fill = new int[partitions];
        for (int p = 0; p < partitions; p++) {
            blocks[p] = new long[header.length + count[p] * width];
            fill[p] = header.length;
            out.add(new Tuple2<>(p, blocks[p]));
        }
        System.arraycopy(header, 0, blocks[0], 0, header.length);
        for (int i = 0; i < used.length; i++) {
            if (!used[i]) continue;
            int o = i * width, p = partition(slots[o], slots[o + 1], partitions);
            System.arraycopy(slots, o, blocks[p], fill[p], width);
            fill[p] += width;
        }
        return out;
    }
}
