import type { User } from "@loom/proto/identity/v1/identity_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { userSchema } from "../schemas.ts";
import { uuid } from "../validation.ts";

function userJson(u: User) {
  return {
    user_id: u.userId,
    email: u.email,
    ...(u.name !== undefined ? { name: u.name } : {}),
    organizations: u.organizations,
    created_at: isoTime(u.createdAt),
    updated_at: isoTime(u.updatedAt),
  };
}

export function userOperations({ identity }: ServiceClients) {
  return [
    defineOperation({
      id: "ListUsers",
      method: "GET",
      path: "/users",
      summary: "Users who belong to the caller's organization",
      response: {
        status: 200,
        description: "The users",
        schema: z.strictObject({ users: z.array(userSchema).meta({ description: "The users" }) }),
      },
      async handle({ call }) {
        const { users } = await identity.listUsers({}, call);
        return { users: users.map(userJson) };
      },
    }),
    defineOperation({
      id: "GetUser",
      method: "GET",
      path: "/users/{user_id}",
      summary: "One user of the caller's organization; any other is 404, like an unknown id",
      params: z.object({ user_id: uuid }),
      response: { status: 200, description: "The user", schema: userSchema },
      async handle({ params, call }) {
        const { user } = await identity.getUser({ userId: params.user_id }, call);
        if (!user) throw new Error("the identity service answered without a user");
        return userJson(user);
      },
    }),
  ];
}
