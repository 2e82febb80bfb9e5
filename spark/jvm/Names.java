// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.Arrays;

/**
 * The names by which Python and these kernels agree on positions: the narrowed rows' columns
 * (Scan.COLUMNS), the row kinds (Screen.KINDS) and the counted flags (Identity.COUNTED). Python
 * reads each array and asks by name; each class checks its own position constants against the
 * names when it loads, so the two sides cannot drift apart silently.
 */
final class Names {
    private Names() {}

    /** Pairs of (name, position): each name must sit at its position in `names`. */
    static void check(String what, String[] names, Object... pairs) {
        if (pairs.length / 2 != names.length) {
            throw new IllegalStateException(what + ": " + names.length + " names, " + pairs.length / 2 + " positions");
        }
        for (int i = 0; i < pairs.length; i += 2) {
            String name = (String) pairs[i];
            int at = (Integer) pairs[i + 1];
            if (at < 0 || at >= names.length || !names[at].equals(name)) {
                throw new IllegalStateException(what + ": " + name + " is not at position " + at + " of "
                        + Arrays.toString(names));
            }
        }
    }
}
