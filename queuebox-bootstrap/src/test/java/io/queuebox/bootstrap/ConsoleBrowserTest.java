package io.queuebox.bootstrap;

import static io.queuebox.bootstrap.console.ConsoleFixtures.MALICIOUS_PAYLOAD;
import static io.queuebox.bootstrap.console.ConsoleFixtures.anEventOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.bootstrap.console.ConsoleFixtures;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.testkit.services.TestServices;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The console end to end in headless Chromium: a real poison publish (RabbitMQ returns a message no queue is bound
 * for, the relay parks it as a permanent failure), the parked event seen in the page with its malicious payload shown
 * as text, a replay refused without the token, then, once the routing is fixed, replayed with the token after the
 * dry-run confirmation, and consumed from the broker. Saves the page as docs/operations-console.png when it passes.
 */
class ConsoleBrowserTest {

    private static final Path CHROMIUM = Path.of(System.getProperty("queuebox.test.chromium", "/usr/bin/chromium"));
    private static final Path CHROMEDRIVER = Path.of(System.getProperty("queuebox.test.chromedriver", "/usr/bin/chromedriver"));
    private static final Path SCREENSHOT = Path.of("..", "docs", "operations-console.png");

    private TestDatabase database;
    private Connection rabbit;
    private Channel channel;
    private String exchange;
    private String queue;
    private Relay relay;
    private ChromeDriver browser;

    @BeforeEach
    void browserAvailable() {
        boolean present = Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
        String install = "install Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver; "
                + ".ci/run does it), or point -Dqueuebox.test.chromium and -Dqueuebox.test.chromedriver at them";
        if (!present && "true".equals(System.getenv("CI"))) {
            Assertions.fail("the console's browser test needs " + CHROMIUM + " and " + CHROMEDRIVER + " on CI: " + install);
        }
        Assumptions.assumeTrue(present, "skipped: no " + CHROMIUM + " or " + CHROMEDRIVER + "; " + install);
    }

    @AfterEach
    void cleanUp() throws Exception {
        if (browser != null) {
            browser.quit();
        }
        if (relay != null) {
            relay.close();
        }
        if (channel != null) {
            channel.queueDelete(queue);
            channel.exchangeDelete(exchange);
            rabbit.close();
        }
        if (database != null) {
            database.close();
        }
    }

    @Test
    void anOperatorSeesAParkedPoisonEventAsTextAndReplaysItWithTheTokenUntilTheBrokerDeliversIt() throws Exception {
        database = TestDatabase.create("console_browser");
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        exchange = "qb_console_" + suffix;
        queue = "qb_console_q_" + suffix;
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(TestServices.rabbitMqUri());
        rabbit = factory.newConnection("queuebox-console-test");
        channel = rabbit.createChannel();
        channel.exchangeDeclare(exchange, "topic", false, true, null);
        channel.queueDeclare(queue, false, false, true, null);
        // Orders are routed; invoices are not yet: their publish comes back unroutable and is parked.
        channel.queueBind(queue, exchange, "order.*");

        Map<String, String> values = new HashMap<>();
        values.put("database.url", database.url());
        values.put("broker.type", "rabbitmq");
        values.put("broker.rabbitmq.uri", TestServices.rabbitMqUri());
        values.put("broker.rabbitmq.exchange", exchange);
        values.put("outbox.pollIntervalMs", "50");
        values.put("http.host", "127.0.0.1");
        values.put("http.port", "0");
        values.put("shutdown.deadlineMs", "5000");
        values.put("console.enabled", "true");
        values.put("console.adminToken", ConsoleEndpointsTest.ADMIN_TOKEN);
        values.put("console.sampleIntervalMs", "1000");
        values.put("metrics.backlogSampleIntervalMs", "1000");
        QueueBoxConfig config = QueueBoxConfig.of(values);
        try (HikariDataSource pool = Pools.operator(config)) {
            Migrations.migrate(pool, config);
        }
        relay = Relay.start(config);

        OutboxEvent poison = anEventOf("invoice", "inv-7", "InvoiceIssued", MALICIOUS_PAYLOAD);
        ConsoleFixtures.write(database.url(), List.of(poison));
        List<String> received = new ArrayList<>();
        // A little traffic, so that the charts have a line to draw.
        for (int round = 0; round < 4; round++) {
            List<OutboxEvent> orders = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                orders.add(anEventOf("order", "order-" + i, "OrderPlaced", "{\"round\":" + round + "}"));
            }
            ConsoleFixtures.write(database.url(), orders);
            Thread.sleep(700);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> database.count("public.queuebox_outbox",
                "status = 'parked' AND last_error LIKE '%unroutable%'") == 1);

        browser = chromium();
        browser.get("http://127.0.0.1:" + relay.httpPort() + "/console/");

        By poisonRow = By.cssSelector("tr[data-event-id='" + poison.eventId() + "']");
        await().atMost(Duration.ofSeconds(15)).until(() -> !browser.findElements(poisonRow).isEmpty());
        String rowText = textOf(poisonRow);
        assertThat(rowText).contains("invoice / inv-7").contains("InvoiceIssued").contains("unroutable")
                .contains("<script>window.__xss='script'</script>").contains("<img src=x onerror=");
        assertThat(browser.findElements(By.cssSelector("#parked-body img, #parked-body script"))).isEmpty();
        assertThat(((JavascriptExecutor) browser).executeScript("return window.__xss === undefined")).isEqualTo(true);
        await().atMost(Duration.ofSeconds(10)).until(() -> browser.findElement(By.id("backlog-parked")).getText().equals("1"));
        await().atMost(Duration.ofSeconds(10)).until(() ->
                !browser.findElements(By.cssSelector("#chart-rate polyline")).isEmpty());
        byte[] screenshot = browser.getScreenshotAs(OutputType.BYTES);

        // Without the token the dry run is refused, and nothing changes.
        click(By.cssSelector("tr[data-event-id='" + poison.eventId() + "'] button.replay-event"));
        await().atMost(Duration.ofSeconds(10)).until(() -> browser.findElement(By.id("message")).getText()
                .contains("admin token is required"));
        assertThat(database.count("public.queuebox_outbox", "status = 'parked'")).isEqualTo(1);

        // The operator fixes the routing, gives the token, replays after the confirmation that shows the count.
        channel.queueBind(queue, exchange, "invoice.*");
        browser.findElement(By.id("token")).sendKeys(ConsoleEndpointsTest.ADMIN_TOKEN);
        browser.findElement(By.id("use-token")).click();
        click(By.cssSelector("tr[data-event-id='" + poison.eventId() + "'] button.replay-event"));
        await().atMost(Duration.ofSeconds(10)).until(() -> browser.findElement(By.id("confirm")).isDisplayed());
        assertThat(browser.findElement(By.id("confirm-text")).getText()).startsWith("Replay 1 parked event(s): event " + poison.eventId());
        browser.findElement(By.id("confirm-yes")).click();

        await().atMost(Duration.ofSeconds(10)).until(() -> browser.findElement(By.id("message")).getText()
                .contains("1 event(s) replayed"));
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            drain(received);
            return received.contains(poison.eventId().toString());
        });
        await().atMost(Duration.ofSeconds(15)).until(() -> browser.findElements(poisonRow).isEmpty()
                && browser.findElement(By.id("backlog-parked")).getText().equals("0"));
        // Received before marked: the row turns sent only once the broker has confirmed the message.
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
                database.count("public.queuebox_outbox", "event_id = '" + poison.eventId() + "' AND status = 'sent'"))
                .isEqualTo(1));

        // Green: the screenshot of the parked event becomes the one docs/operations.md shows.
        if (Files.isDirectory(SCREENSHOT.getParent())) {
            Files.write(SCREENSHOT, screenshot);
        }
    }

    private ChromeDriver chromium() {
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1300",
                "--disable-gpu", "--no-first-run");
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(new File(CHROMEDRIVER.toString())).usingAnyFreePort().build();
        return new ChromeDriver(service, options);
    }

    /** The page re-renders its table every few seconds: find the element afresh until the click lands. */
    private void click(By by) {
        await().atMost(Duration.ofSeconds(10)).ignoreException(StaleElementReferenceException.class).until(() -> {
            WebElement element = browser.findElement(by);
            if (!element.isEnabled()) {
                return false;
            }
            element.click();
            return true;
        });
    }

    private String textOf(By by) {
        return await().atMost(Duration.ofSeconds(10)).ignoreException(StaleElementReferenceException.class)
                .until(() -> browser.findElement(by).getText(), text -> !text.isEmpty());
    }

    private void drain(List<String> received) throws Exception {
        GetResponse response;
        while ((response = channel.basicGet(queue, true)) != null) {
            received.add(response.getProps().getMessageId());
        }
    }
}
