// SPDX-License-Identifier: Apache-2.0
// The SCRAM users a cluster lacks, created with Kafka's own ConfigCommand run in this one JVM.
// Run as a single-file program (`java -cp <kafka libs>/* ScramUsers.java USERS_FILE
// kafka.admin.ConfigCommand <connection arguments>`), USERS_FILE holding the declared users, one
// "name password" per line. Prints one JSON line: {"existing": [...], "created": [...]} (names
// only, never a password or a key).
//
// Why one JVM that ends with System.exit: each ConfigCommand JVM takes a second or more to start,
// and over ZooKeeper's TLS (a Netty client) it then idles 2 s before it exits (Netty's graceful
// shutdown has a fixed quiet period). The describe and the creations, each its own JVM, were the
// longest step on `lab up`'s path.
//
// The passwords never go on a command line: each reaches ConfigCommand through a 0600 file
// (--add-config-file) removed once it is read.
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class ScramUsers {
    private static final Pattern DESCRIBED = Pattern.compile("user-principal '([^']*)'");

    public static void main(String[] args) {
        int status = 0;
        try {
            createMissing(args);
        } catch (Throwable e) {  // an uncaught error would leave Netty's threads holding the JVM
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    private static void createMissing(String[] args) throws Exception {
        Map<String, String> declared = declared(Path.of(args[0]));
        String tool = args[1];
        String[] connection = Arrays.copyOfRange(args, 2, args.length);

        // ConfigCommand prints through Scala's Console, which keeps the System.out it first sees:
        // set the capture before its first call.
        PrintStream stdout = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));

        run(tool, connection, "--describe", "--entity-type", "users");
        Set<String> existing = new TreeSet<>();
        Matcher m = DESCRIBED.matcher(printed.toString(StandardCharsets.UTF_8));
        while (m.find()) {
            existing.add(m.group(1));
        }

        List<String> created = new ArrayList<>();
        for (Map.Entry<String, String> user : declared.entrySet()) {
            if (!existing.contains(user.getKey())) {
                create(tool, connection, user.getKey(), user.getValue());
                created.add(user.getKey());
            }
        }
        stdout.println("{\"existing\": " + json(existing) + ", \"created\": " + json(created) + "}");
        stdout.flush();
    }

    private static Map<String, String> declared(Path file) throws Exception {
        Map<String, String> users = new TreeMap<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            int space = line.indexOf(' ');
            if (space > 0) {
                users.put(line.substring(0, space), line.substring(space + 1));
            }
        }
        return users;
    }

    private static void create(String tool, String[] connection, String user, String password) throws Exception {
        Path file = Files.createTempFile("scram-", ".properties",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Files.writeString(file, "SCRAM-SHA-512=iterations=8192,password=" + password + "\n");
            run(tool, connection, "--alter", "--entity-type", "users", "--entity-name", user,
                "--add-config-file", file.toString());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    // ConfigCommand.main returns when it succeeds; when it fails it prints why and exits 1 itself.
    private static void run(String tool, String[] connection, String... action) throws Exception {
        String[] argv = Arrays.copyOf(connection, connection.length + action.length);
        System.arraycopy(action, 0, argv, connection.length, action.length);
        Class.forName(tool).getMethod("main", String[].class).invoke(null, (Object) argv);
    }

    private static String json(Iterable<String> names) {
        List<String> quoted = new ArrayList<>();
        for (String name : names) {
            quoted.add("\"" + name.replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
        }
        return "[" + String.join(", ", quoted) + "]";
    }
}
