// SPDX-License-Identifier: Apache-2.0
// dcdrill: which regular expressions java.util.regex.Pattern refuses (MirrorMaker 2 compiles its
// `topics` setting with it). Run as a single source file: java RegexCheck.java <regex>...
// Prints one line per argument, "ok" or "error <description>", so the caller pairs them by order.
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

public final class RegexCheck {
    public static void main(String[] args) {
        for (String regex : args) {
            try {
                Pattern.compile(regex);
                System.out.println("ok");
            } catch (PatternSyntaxException e) {
                System.out.println("error " + e.getDescription() + " near index " + e.getIndex());
            }
        }
    }
}
