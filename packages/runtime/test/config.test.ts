import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, env, loadConfig, serviceSettings } from "../src/config.ts";

const schema = z.object({
  PORT: env.port(8080),
  SERVICE_TOKEN: z.string().min(16),
  MONGODB_URL: env.mongoUrl().optional(),
});

describe("configuration from the environment", () => {
  it("applies defaults and treats empty variables as unset", () => {
    expect(loadConfig(schema, { SERVICE_TOKEN: "x".repeat(16), MONGODB_URL: "" })).toEqual({
      PORT: 8080,
      SERVICE_TOKEN: "x".repeat(16),
    });
  });

  it("fails fast naming every bad variable", () => {
    let error: unknown;
    try {
      loadConfig(schema, { PORT: "eighty", MONGODB_URL: "not a url" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/SERVICE_TOKEN/);
    expect(message).toMatch(/MONGODB_URL/);
  });

  it("takes every form of MongoDB connection string, a replica set's host list included", () => {
    const token = "x".repeat(16);
    for (const url of [
      "mongodb://127.0.0.1:27017/",
      "mongodb://a:27017,b:27017,c:27017/?replicaSet=rs0",
      "mongodb+srv://user:pw@cluster0.example.net/loom",
    ]) {
      expect(loadConfig(schema, { SERVICE_TOKEN: token, MONGODB_URL: url }).MONGODB_URL).toBe(url);
    }
    for (const url of ["http://127.0.0.1:27017", "mongodb://", "mongodb://a b"]) {
      expect(() => loadConfig(schema, { SERVICE_TOKEN: token, MONGODB_URL: url })).toThrow(/MONGODB_URL/);
    }
  });

  it("refuses a LOG_FORMAT that is neither json nor pretty, naming it", () => {
    const schema = z.object(serviceSettings(8081));
    expect(loadConfig(schema, { SERVICE_TOKEN: "x".repeat(16), LOG_FORMAT: "pretty" }).LOG_FORMAT).toBe("pretty");
    expect(() => loadConfig(schema, { SERVICE_TOKEN: "x".repeat(16), LOG_FORMAT: "xml" })).toThrow(ConfigError);
    expect(() => loadConfig(schema, { SERVICE_TOKEN: "x".repeat(16), LOG_FORMAT: "xml" })).toThrow(/LOG_FORMAT/);
  });
});
