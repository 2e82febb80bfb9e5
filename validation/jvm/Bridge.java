// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** What the workload's JVM programs share: their stdin and stdout as validation/java_client.py speaks them. */
final class Bridge {
    private Bridge() {}

    /** stdout for the program's answers; whatever else prints there (a logger's console) goes to stderr. */
    static PrintStream answers() {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        return out;
    }

    static BufferedReader stdin() {
        return new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    }

    /** The client's properties: java.util.Properties lines up to an empty line (passwords included: a pipe, never argv). */
    static Properties properties(BufferedReader in) throws IOException {
        StringBuilder block = new StringBuilder();
        for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
            block.append(line).append('\n');
        }
        Properties props = new Properties();
        props.load(new StringReader(block.toString()));
        return props;
    }

    /** A consumer's properties: bytes in, and no commit but those the program makes itself. */
    static Properties consumerProperties(BufferedReader in) throws IOException {
        Properties props = properties(in);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return props;
    }
}
