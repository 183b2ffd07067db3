import type { FastifyInstance } from 'fastify';
import type { CriteriaExclusionCreate, CriteriaExclusionUpdate } from '../../../schemas/rules.schema.js';
import { compileExclusionCriteria } from '../../processor/exclusion-criteria.js';
import { ExclusionsRepository, type ExclusionInput } from '../rules/exclusions.repository.js';
import { registerRuleRoutes, upperCaseMethod } from './rule-routes.js';

/** Exclusion rules (docs/rules.md): path exclusions and criteria exclusions on the same routes. */
export default async function exclusionsRoutes(app: FastifyInstance): Promise<void> {
  const repo = new ExclusionsRepository(app.deps.pg);
  registerRuleRoutes<ExclusionInput | CriteriaExclusionCreate>(app, {
    kind: 'exclusion',
    rows: repo,
    preValidation: upperCaseMethod(),
    describe: {
      list:
        'Path and criteria exclusions, each in the shape it was created in (docs/rules.md). Soft-deleted ' +
        'criteria exclusions are left out unless `includeDeleted=true` (or `deleted=true`: only them).',
      get: 'In the shape it was created in; a soft-deleted criteria exclusion is returned with its `deletedAt`.',
      create:
        'A path exclusion (`name`, `pathPattern`, `method`, `statusCode`, `isActive`) or a criteria ' +
        'exclusion (`criteria` in the search language, `enabled`), told apart by their fields; a body ' +
        'mixing both is a 400. Criteria that do not parse are a 400 whose details give the `position`.',
      replace:
        'Full replace in the shape the rule has (a body of the other shape is a 400). Path exclusion: ' +
        'omitted description becomes empty, omitted statusCode null. Criteria exclusion: omitted ' +
        'description becomes null; a soft-deleted rule is not found. Omitted buckets/environments keep ' +
        'their value.',
      delete:
        'A path exclusion is removed. A criteria exclusion is soft-deleted: `deletedAt` is set, it is no ' +
        'longer applied, and it is listed only with `includeDeleted=true`.',
    },
    async create(accountSid, body, shape) {
      if (shape === 'B') return repo.create(accountSid, body as ExclusionInput);
      const criteria = body as CriteriaExclusionCreate;
      compileExclusionCriteria(criteria.criteria, 'body.criteria');
      return repo.createCriteria(accountSid, criteria);
    },
    async replace(accountSid, sid, body, shape) {
      if (shape === 'B') return repo.update(accountSid, sid, body as ExclusionInput);
      const criteria = body as CriteriaExclusionUpdate;
      compileExclusionCriteria(criteria.criteria, 'body.criteria');
      return repo.updateCriteria(accountSid, sid, criteria);
    },
  });
}
