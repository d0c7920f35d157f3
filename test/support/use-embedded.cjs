process.env.TEST_DATABASE_KIND = 'embedded';
