// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.StringJoiner;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka's own Java consumer, one member of the workload's group, for validation/java_client.py.
 * The Python consumer writes the ledger; this process polls and commits only once told the
 * batch is recorded (record first, then commit: a crash redelivers, never skips).
 *
 * <p>stdin: the consumer's properties, an empty line, the topic, then commands: {@code c} commit
 * the last batch and poll on; end of input stops. stdout, fields tab-separated: {@code r topic
 * partition offset value} a record (its value as text), {@code b count} the end of a batch (the
 * process then waits for {@code c}), {@code v assigned|revoked topic:partition,...}, {@code x
 * kind message} an error it keeps going through.
 */
public final class ConsumerBridge {
    private static final String STOP = "";
    private static PrintStream answers;

    public static void main(String[] args) throws Exception {
        answers = Bridge.answers();
        BufferedReader in = Bridge.stdin();
        Properties props = Bridge.consumerProperties(in);
        String topic = in.readLine();
        LinkedBlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    commands.add(line);
                }
            } catch (IOException e) {
                // the control's side went away: stop as at the end of input
            }
            commands.add(STOP);
        }, "commands");
        reader.setDaemon(true);
        reader.start();
        run(props, topic, commands);
    }

    private static void run(Properties props, String topic, LinkedBlockingQueue<String> commands)
            throws InterruptedException {
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    say("v\trevoked\t" + names(partitions));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    say("v\tassigned\t" + names(partitions));
                }
            });
            while (!STOP.equals(commands.peek())) {
                ConsumerRecords<byte[], byte[]> batch;
                try {
                    batch = consumer.poll(Duration.ofMillis(500));
                } catch (RuntimeException e) {  // keep going through a DC loss, as the group does
                    say("x\terror\t" + e.getClass().getSimpleName() + ": " + text(e.getMessage()));
                    Thread.sleep(1000);
                    continue;
                }
                if (batch.isEmpty()) {
                    answers.flush();
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    String value = r.value() == null ? "" : text(new String(r.value(), StandardCharsets.UTF_8));
                    answers.append("r\t").append(r.topic()).append('\t').append(String.valueOf(r.partition()))
                        .append('\t').append(String.valueOf(r.offset())).append('\t').append(value).append('\n');
                }
                say("b\t" + batch.count());
                if (!STOP.equals(commands.take())) {
                    try {
                        consumer.commitSync();
                    } catch (RuntimeException e) {  // a failed commit means redelivery later
                        say("x\tcommit-failed\t" + e.getClass().getSimpleName() + ": " + text(e.getMessage()));
                    }
                } else {
                    break;
                }
            }
        }
        answers.flush();
    }

    private static String names(Collection<TopicPartition> partitions) {
        StringJoiner out = new StringJoiner(",");
        partitions.forEach(tp -> out.add(tp.topic() + ":" + tp.partition()));
        return out.toString();
    }

    private static String text(String s) {
        return String.valueOf(s).replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    private static void say(String line) {
        answers.append(line).append('\n');
        answers.flush();
    }
}
