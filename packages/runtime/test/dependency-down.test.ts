import { errors as natsErrors } from "@nats-io/nats-core";
import {
  MongoBulkWriteError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
} from "mongodb";
import { describe, expect, it } from "vitest";
import { DependencyDown, isDependencyDown } from "../src/dependency-down.ts";

describe("isDependencyDown", () => {
  it("knows a database that cannot be reached, also when the driver wraps it (insertMany as the connection drops)", () => {
    const network = new MongoNetworkError("connection 1 to 127.0.0.1:27017 closed");
    expect(isDependencyDown(network)).toBe(true);
    expect(isDependencyDown(new MongoNetworkTimeoutError("connection 2 to 127.0.0.1:27017 timed out"))).toBe(true);
    expect(
      isDependencyDown(new MongoServerSelectionError("Server selection timed out after 5000 ms", {} as never)),
    ).toBe(true);
    expect(isDependencyDown(new MongoBulkWriteError(network as never, {} as never))).toBe(true);
    // What the driver lets through when it writes to a socket the server has just closed.
    expect(
      isDependencyDown(Object.assign(new Error("This socket has been ended by the other party"), { code: "EPIPE" })),
    ).toBe(true);
  });

  it("knows a NATS connection that is closed, draining or lost, by the client's classes", () => {
    expect(isDependencyDown(new natsErrors.ClosedConnectionError())).toBe(true);
    expect(isDependencyDown(new natsErrors.DrainingConnectionError())).toBe(true);
    expect(isDependencyDown(new natsErrors.TimeoutError())).toBe(true);
  });

  it("knows what an adapter reports as DependencyDown (S3 unreachable, timing out or answering 5xx)", () => {
    const timeout = Object.assign(new Error("the request socket timed out"), { name: "TimeoutError" });
    expect(isDependencyDown(new DependencyDown("S3", { cause: timeout }))).toBe(true);
    // A bare SDK timeout says nothing by class: the adapter decides, not the shared packages.
    expect(isDependencyDown(timeout)).toBe(false);
  });

  it("goes by class, not by name: an error merely named like a driver's is not one", () => {
    expect(
      isDependencyDown(Object.assign(new Error("connect ECONNREFUSED"), { name: "MongoServerSelectionError" })),
    ).toBe(false);
  });

  it("leaves other failures alone", () => {
    expect(isDependencyDown(new MongoServerError({ message: "E11000 duplicate key", code: 11000 }))).toBe(false);
    expect(
      isDependencyDown(new MongoBulkWriteError({ message: "E11000 duplicate key", code: 11000 }, {} as never)),
    ).toBe(false);
    expect(isDependencyDown(new TypeError("x is undefined"))).toBe(false);
  });
});
