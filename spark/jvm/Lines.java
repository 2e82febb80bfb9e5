// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * RECORD.md's "one JSON object per line, no key twice, nothing after it", on a JSON Lines ledger's
 * text (spark/ledgers.py): Spark's JSON source would read a line holding an array as several rows,
 * keep the last of two values for one key, and may drop what follows the object, so a tampered row
 * could pass. One pass over the bytes, no allocation per line; the first offending line stops it,
 * and spark/ledgers.py locate_problem names it. A line whose object never closes is left to Spark's
 * own corrupt-record count (a torn last line is one).
 */
public final class Lines {
    private Lines() {}

    /** True when every line of `text` (spark.read.text: one string column) is well formed. */
    public static boolean wellFormed(Dataset<Row> text) {
        JavaRDD<InternalRow> rows = text.queryExecution().toRdd().toJavaRDD();
        return rows.filter(row -> problem(row.getUTF8String(0)) != null).isEmpty();
    }

    /** What is wrong with one line, or null: for tests and the message's sake. */
    public static String problem(UTF8String line) {
        Object base = line.getBaseObject();
        long off = line.getBaseOffset();
        int n = line.numBytes();
        int i = skipSpace(base, off, 0, n);
        if (i == n) return null;  // a blank line
        if (Platform.getByte(base, off + i) != '{') return "not a JSON object";
        int depth = 0;
        boolean key = false;  // the next string at depth 1 is a key
        int keys = 0;
        int[] starts = new int[16], ends = new int[16];
        while (i < n) {
            byte b = Platform.getByte(base, off + i);
            if (b == '"') {
                int end = stringEnd(base, off, i + 1, n);
                if (end < 0) return null;  // torn inside a string
                if (depth == 1 && key) {
                    for (int k = 0; k < keys; k++) {
                        if (sameKey(base, off, starts[k], ends[k], i + 1, end)) return "a key twice";
                    }
                    if (keys == starts.length) {
                        starts = java.util.Arrays.copyOf(starts, keys * 2);
                        ends = java.util.Arrays.copyOf(ends, keys * 2);
                    }
                    starts[keys] = i + 1;
                    ends[keys++] = end;
                    key = false;
                }
                i = end + 1;
                continue;
            }
            if (b == '{' || b == '[') {
                depth++;
                key = depth == 1;
            } else if (b == '}' || b == ']') {
                if (--depth == 0) {
                    return skipSpace(base, off, i + 1, n) == n ? null : "text after the object";
                }
            } else if (b == ',' && depth == 1) {
                key = true;
            }
            i++;
        }
        return null;  // never closed: Spark counts it corrupt
    }

    private static int skipSpace(Object base, long off, int i, int n) {
        while (i < n) {
            byte b = Platform.getByte(base, off + i);
            if (b != ' ' && b != '\t' && b != '\r' && b != '\n') break;
            i++;
        }
        return i;
    }

    /** The index of the quote that closes a string whose first byte is at i; -1 when none does. */
    private static int stringEnd(Object base, long off, int i, int n) {
        while (i < n) {
            byte b = Platform.getByte(base, off + i);
            if (b == '\\') {
                i += 2;
            } else if (b == '"') {
                return i;
            } else {
                i++;
            }
        }
        return -1;
    }

    /** Whether two keys' raw bytes [a0, a1) and [b0, b1) name one key: byte for byte, or, when
     *  either is escaped, after decoding (Jackson decodes "st\u0061tus" as "status"). */
    private static boolean sameKey(Object base, long off, int a0, int a1, int b0, int b1) {
        if (a1 - a0 == b1 - b0) {
            boolean same = true;
            for (int k = 0; k < a1 - a0 && same; k++) {
                same = Platform.getByte(base, off + a0 + k) == Platform.getByte(base, off + b0 + k);
            }
            if (same) return true;
        }
        if (!escaped(base, off, a0, a1) && !escaped(base, off, b0, b1)) return false;
        return decode(base, off, a0, a1).equals(decode(base, off, b0, b1));
    }

    private static boolean escaped(Object base, long off, int i, int end) {
        for (; i < end; i++) if (Platform.getByte(base, off + i) == '\\') return true;
        return false;
    }

    private static String decode(Object base, long off, int i, int end) {
        byte[] raw = new byte[end - i];
        Platform.copyMemory(base, off + i, raw, Platform.BYTE_ARRAY_OFFSET, raw.length);
        String s = new String(raw, java.nio.charset.StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder(s.length());
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            if (c != '\\' || k + 1 >= s.length()) {
                out.append(c);
                continue;
            }
            char e = s.charAt(++k);
            switch (e) {
                case 'n': out.append('\n'); break;
                case 't': out.append('\t'); break;
                case 'r': out.append('\r'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'u':
                    try {
                        out.append((char) Integer.parseInt(s.substring(k + 1, k + 5), 16));
                        k += 4;
                    } catch (RuntimeException notHex) {  // Jackson refuses the line: Spark calls it corrupt
                        out.append("\\u");
                    }
                    break;
                default: out.append(e);  // \" \\ \/
            }
        }
        return out.toString();
    }
}
